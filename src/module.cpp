// cuckoo._core: registration only. The core is in cpp/include/cuckoo/, conversions in keys.hpp.
#include <pybind11/pybind11.h>

#include <new>
#include <stdexcept>
#include <utility>

#include "cuckoo/cpu.hpp"
#include "cuckoo/errors.hpp"
#include "cuckoo/fault.hpp"
#include "errors.hpp"
#include "filter_binding.hpp"
#include "keys.hpp"
#include "shared.hpp"
#include "store_binding.hpp"
#include "window_binding.hpp"

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

// The kernel level (cpp/include/cuckoo/cpu.hpp): asked for bug reports and benchmark headers,
// switched by the tests. The package reads cpu_level_request at import (python/cuckoo).
void register_cpu_level(py::module_& m) {
    m.def("cpu_level", [] { return cuckoo::cpu_level_name(cuckoo::cpu_level()); },
          "The kernel level the bulk operations run at: 'portable', 'avx2' or 'avx512' (CUCKOO_CPU overrides).");
    m.def("cpu_levels", [] {
        py::list levels;
        for (int k = 0; k < cuckoo::kCpuLevelCount; ++k)
            if (cuckoo::cpu_supports(static_cast<cuckoo::CpuLevel>(k)))
                levels.append(cuckoo::cpu_level_name(static_cast<cuckoo::CpuLevel>(k)));
        return py::tuple(levels);
    }, "The kernel levels this CPU can run, lowest first.");
    m.def("_set_cpu_level", [](const std::string& name) {
        cuckoo::CpuLevel level;
        if (!cuckoo::parse_cpu_level(name.c_str(), level))
            throw py::value_error("unknown kernel level '" + name + "': use portable, avx2 or avx512");
        if (!cuckoo::set_cpu_level(level)) throw py::value_error("this CPU cannot run the kernel level '" + name + "'");
    }, py::arg("level"));
    m.def("_cpu_level_request", [] {
        const cuckoo::CpuLevelRequest& r = cuckoo::cpu_level_request();
        static const char* const status[] = {"unset", "obeyed", "unknown", "unsupported"};
        // The value as os.environ decodes it (file-system encoding, surrogateescape).
        py::object value = py::none();
        if (r.value) {
            value = py::reinterpret_steal<py::object>(PyUnicode_DecodeFSDefault(r.value));
            if (!value) throw py::error_already_set();
        }
        return py::make_tuple(value, status[r.status]);
    });
}

// Sets main_thread_ident (signal_check.hpp); called by the module's init function (not from a
// static initialiser: it imports a module).
void init_signal_check() {
    main_thread_ident = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
}

// SignalCheck's GIL-taking half (signal_check.hpp): here, compiled once, rather than inline in
// every bulk loop unit, which then needs no pybind11.
bool SignalCheck::look() {
    {
        py::gil_scoped_acquire gil;
        ++signal_checks_taken;
        interrupted_ = PyErr_CheckSignals() != 0;
    }
    // From after the GIL came back: the wait for it is not work time.
    next_look_ = std::chrono::steady_clock::now() + kSignalCheckInterval;
    return interrupted_;
}

void SignalCheck::raise_if_interrupted() const {
    if (interrupted_) throw py::error_already_set();
}

}  // namespace cuckoo_py

PYBIND11_MODULE(_core, m) {
    m.doc() = "Compiled core of cuckoo: see the cuckoo package.";
    cuckoo_py::init_signal_check();
    cuckoo_py::register_errors(m);
    cuckoo_py::register_keys(m);
    cuckoo_py::register_filter(m);
    cuckoo_py::register_store(m);
    cuckoo_py::register_dedup_exact(m);
    cuckoo_py::register_json_keys(m);
    cuckoo_py::register_csv_fields(m);
    cuckoo_py::register_window(m);
    // Tests only (tests/test_faults.py): the n-th allocation of a table, an index or a log
    // mapping from now raises MemoryError (0 disarms); returns the allocations seen since the
    // previous call.
    m.def("_fail_allocation", &cuckoo::fault::arm, pybind11::arg("n"));
    // Tests only: how many times long calls took the GIL back to check for Ctrl-C since the
    // previous call (cuckoo_py::SignalCheck).
    m.def("_signal_checks", [] { return std::exchange(cuckoo_py::signal_checks_taken, uint64_t(0)); });
    cuckoo_py::register_cpu_level(m);
}
