// Test hooks of the record framings' key extraction (cpp/include/cuckoo/dedup/json_key.hpp and
// cpp/include/cuckoo/dedup/csv.hpp): one record in, its key out, so that hypothesis can compare
// each framing with a Python model record by record (tests/test_record_keys_*.py). The dedup
// pipeline itself calls the core directly; nothing here is public API.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <string_view>
#include <vector>

#include "cuckoo/dedup/csv.hpp"
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

namespace {

// A byte argument (delimiter, quote) checked once here, so the core sees only valid specs.
unsigned char csv_byte(int value, const char* what) {
    if (value < 0 || value > 255) throw py::value_error(std::string(what) + " must be a byte (0..255)");
    if (value == '\n' || value == '\r') throw py::value_error(std::string(what) + " cannot be '\\n' or '\\r'");
    return static_cast<unsigned char>(value);
}

std::string_view bytes_view(const py::bytes& b) { return std::string_view(b); }

const unsigned char* uchars(std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); }

// The records of data as csv_record_ends cuts them (each with its '\n'), then the rest after
// the last record end, if any.
py::list csv_records(const py::bytes& data, int delimiter, int quote) {
    const unsigned char d = csv_byte(delimiter, "delimiter");
    const unsigned char q = quote == 0 ? 0 : csv_byte(quote, "quote");
    if (q && q == d) throw py::value_error("the delimiter and the quote must differ");
    const std::string_view s = bytes_view(data);
    std::vector<uint64_t> ends(s.size() + 8);
    const size_t count = cuckoo::dedup::csv_record_ends(uchars(s), s.size(), q, ends.data(), d);
    py::list out;
    size_t start = 0;
    for (size_t k = 0; k < count; ++k) {
        out.append(py::bytes(s.data() + start, ends[k] - start));
        start = ends[k];
    }
    if (start < s.size()) out.append(py::bytes(s.data() + start, s.size() - start));
    return out;
}

// The key of one record (without its '\n'): bytes, None when missing, ValueError when invalid.
py::object field_key(const py::bytes& record, const std::string& mode, int delimiter, const std::vector<uint32_t>& columns,
                     uint32_t first, uint32_t last, int quote) {
    cuckoo::dedup::FieldKeySpec spec;
    spec.delimiter = csv_byte(delimiter, "delimiter");
    if (mode == "csv") {
        spec.mode = cuckoo::dedup::FieldKeySpec::csv_columns;
        spec.quote = csv_byte(quote, "quote");
        if (spec.quote == 0 || spec.quote == spec.delimiter) throw py::value_error("the quote must be non-zero and differ from the delimiter");
        if (columns.empty()) throw py::value_error("a CSV key needs at least one column");
        spec.columns = columns;
    } else if (mode == "fields") {
        spec.mode = cuckoo::dedup::FieldKeySpec::field_range;
        if (first > last) throw py::value_error("the first field must not come after the last");
        spec.first = first;
        spec.last = last;
    } else {
        throw py::value_error("mode must be 'csv' or 'fields', not '" + mode + "'");
    }
    const std::string_view s = bytes_view(record);
    std::string scratch, error;
    const unsigned char* key = nullptr;
    size_t len = 0;
    switch (cuckoo::dedup::field_key(uchars(s), s.size(), spec, scratch, key, len, error)) {
        case cuckoo::dedup::KeyStatus::found: return py::bytes(reinterpret_cast<const char*>(key), len);
        case cuckoo::dedup::KeyStatus::missing: return py::none();
        default: throw py::value_error(error);
    }
}

py::list csv_fields(const py::bytes& record, int delimiter, int quote) {
    const unsigned char d = csv_byte(delimiter, "delimiter"), q = csv_byte(quote, "quote");
    if (q == 0 || q == d) throw py::value_error("the quote must be non-zero and differ from the delimiter");
    const std::string_view s = bytes_view(record);
    std::vector<std::string> fields;
    std::string error;
    if (cuckoo::dedup::csv_fields(uchars(s), s.size(), d, q, fields, error) != cuckoo::dedup::KeyStatus::found)
        throw py::value_error(error);
    py::list out;
    for (const std::string& f : fields) out.append(py::bytes(f));
    return out;
}

size_t bom_length(const py::bytes& data) {
    const std::string_view s = bytes_view(data);
    return cuckoo::dedup::bom_length(uchars(s), s.size());
}

}  // namespace

void register_csv_fields(py::module_& m) {
    m.def("_csv_records", &csv_records, py::arg("data"), py::arg("delimiter"), py::arg("quote"));
    m.def("_field_key", &field_key, py::arg("record"), py::arg("mode"), py::arg("delimiter"), py::arg("columns"),
          py::arg("first"), py::arg("last"), py::arg("quote") = int('"'));
    m.def("_csv_fields", &csv_fields, py::arg("record"), py::arg("delimiter"), py::arg("quote"));
    m.def("_bom_length", &bom_length, py::arg("data"));
}

}  // namespace cuckoo_py
