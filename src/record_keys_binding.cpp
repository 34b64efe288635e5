// Test hooks of the record framings' key extraction (cpp/include/cuckoo/dedup/json_key.hpp and
// cpp/include/cuckoo/dedup/csv.hpp): one record in, its key out, so that hypothesis can compare
// each framing with a Python model record by record (tests/test_record_keys_*.py). The dedup
// pipeline itself calls the core directly; nothing here is public API.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "cuckoo/dedup/json_key.hpp"

namespace cuckoo_py {

namespace py = pybind11;

// ---- JSON keys (register_json_keys) ------------------------------------------------------------

// _json_key(line, path): the key bytes of one line (no '\n') at the path's members, None when
// missing, ValueError with the core's message when the line is not valid JSON.
void register_json_keys(py::module_& m) {
    m.def("_json_key", [](const py::bytes& line, const std::vector<py::bytes>& path) -> py::object {
        cuckoo::dedup::JsonPath p;
        for (const py::bytes& member : path) p.members.push_back(std::string(member));
        const std::string_view text(line);
        std::string key, error;
        switch (cuckoo::dedup::json_key(reinterpret_cast<const unsigned char*>(text.data()), text.size(), p, key, error)) {
            case cuckoo::dedup::KeyStatus::found: return py::bytes(key);
            case cuckoo::dedup::KeyStatus::missing: return py::none();
            default: throw py::value_error(error);
        }
    }, py::arg("line"), py::arg("path"));
}

// ---- CSV and delimited fields (register_csv_fields) --------------------------------------------

void register_csv_fields(py::module_& m) { (void)m; }

}  // namespace cuckoo_py
