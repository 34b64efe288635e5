// The package's exception types, created once in the module and raised from the bindings.
//
//   CuckooError(Exception)            base of every error of the package
//   FilterFullError(CuckooError)      no room for a key; `.inserted` counts the keys of a batch
//                                     that went in before it, `.reason` says why (raise_filter_full)
//   FormatError(CuckooError, ValueError)       serialized data that cannot be read
//   ReadOnlyError(CuckooError, TypeError)      a write to a read-only (memory-mapped) filter
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

namespace cuckoo_py {

namespace py = pybind11;

struct ErrorTypes {
    PyObject* base = nullptr;
    PyObject* full = nullptr;
    PyObject* format = nullptr;
    PyObject* read_only = nullptr;
};

inline ErrorTypes& error_types() {
    static ErrorTypes types;  // plain pointers, owned by the module: nothing to destroy at exit
    return types;
}


// `reason`: "full" (no room within max_kicks), "copies" (the key's fingerprint fills its bucket
// pair), "low_load", "memory" or "max_stages" (a growable filter that may not grow).
[[noreturn]] inline void raise_filter_full(const std::string& message, uint64_t inserted, const char* reason) {
    py::object exc = py::reinterpret_steal<py::object>(
        PyObject_CallFunction(error_types().full, "s", message.c_str()));
    if (!exc) throw py::error_already_set();
    exc.attr("inserted") = inserted;
    exc.attr("reason") = reason;
    PyErr_SetObject(error_types().full, exc.ptr());
    throw py::error_already_set();
}

void register_errors(py::module_& m);

}  // namespace cuckoo_py
