// cuckoo._core: registration only. The core is in cpp/include/cuckoo/, conversions in keys.hpp.
#include <pybind11/pybind11.h>

#include <new>
#include <stdexcept>

#include "cuckoo/fault.hpp"
#include "cuckoo/filter.hpp"
#include "cuckoo/format.hpp"
#include "errors.hpp"
#include "filter_binding.hpp"

namespace cuckoo_py {

namespace {

PyObject* new_error(py::module_& m, const char* name, const char* doc, PyObject* bases) {
    const std::string qualified = std::string("cuckoo.") + name;
    PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
    if (!type) throw py::error_already_set();
    m.add_object(name, py::handle(type));  // the module keeps one reference, our pointer borrows it
    return type;
}

}  // namespace

void register_errors(py::module_& m) {
    ErrorTypes& e = error_types();
    e.base = new_error(m, "CuckooError", "Base class of every error raised by cuckoo.", PyExc_Exception);
    py::tuple full_bases = py::make_tuple(py::handle(e.base));
    e.full = new_error(m, "FilterFullError",
                       "No room was found for a key within max_kicks. Nothing stored is lost; in a batch, "
                       ".inserted counts the keys handled before the failure.",
                       full_bases.ptr());
    py::tuple format_bases = py::make_tuple(py::handle(e.base), py::handle(PyExc_ValueError));
    e.format = new_error(m, "FormatError", "Serialized filter data that cannot be read (corrupt, truncated, unknown version).",
                         format_bases.ptr());
    py::tuple ro_bases = py::make_tuple(py::handle(e.base), py::handle(PyExc_TypeError));
    e.read_only = new_error(m, "ReadOnlyError", "A write to a read-only (memory-mapped) filter.", ro_bases.ptr());

    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const cuckoo::ReadOnlyError& ex) {
            PyErr_SetString(error_types().read_only, ex.what());
        } catch (const cuckoo::FilterFullError& ex) {
            PyErr_SetString(error_types().full, ex.what());
        } catch (const cuckoo::FormatError& ex) {
            PyErr_SetString(error_types().format, ex.what());
        }
    });
}

}  // namespace cuckoo_py

PYBIND11_MODULE(_core, m) {
    m.doc() = "Compiled core of cuckoo: see the cuckoo package.";
    cuckoo_py::register_errors(m);
    cuckoo_py::register_filter(m);
    cuckoo_py::register_store(m);
    // Tests only (tests/test_faults.py): the n-th allocation of a table, an index or a log
    // mapping from now raises MemoryError (0 disarms); returns the allocations seen since the
    // previous call.
    m.def("_fail_allocation", &cuckoo::fault::arm, pybind11::arg("n"));
}
