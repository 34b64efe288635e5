// The binding of the native dedup pipeline (cpp/include/cuckoo/dedup.hpp): Filter._dedup
// (dedup_binding.cpp) and _Store._dedup (store_binding.cpp) convert their arguments here, run the
// pipeline without the GIL and return its counts. POSIX only, like the pipeline.
#pragma once

#if !defined(_WIN32)

#include <pybind11/pybind11.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "cuckoo/dedup.hpp"
#include "shared.hpp"

namespace cuckoo_py {

namespace py = pybind11;

// The arguments both tables take: inputs as (fd, bytes already read from it) pairs.
struct DedupCall {
    std::vector<cuckoo::dedup::Input> inputs;
    int out_fd;
    int dropped_fd;
    cuckoo::dedup::Options opt;
    py::object progress;  // None or progress(lines, bytes)
};

inline DedupCall dedup_call(const py::list& inputs, int out_fd, int dropped_fd, uint64_t block, unsigned threads,
                            uint64_t max_key, py::object progress) {
    DedupCall c{{}, out_fd, dropped_fd, {}, std::move(progress)};
    for (const py::handle item : inputs) {
        const auto pair = item.cast<std::pair<int, py::bytes>>();
        const std::string prefix = pair.second;
        c.inputs.push_back(cuckoo::dedup::Input{pair.first, std::vector<unsigned char>(prefix.begin(), prefix.end())});
    }
    if (block == 0 || threads == 0) throw py::value_error("block and threads must be positive");
    c.opt.block = static_cast<size_t>(block);
    c.opt.threads = threads;
    c.opt.max_key = max_key;
    c.opt.tick_every = kSignalCheckInterval;  // the interrupt check's interval (shared.hpp)
    return c;
}

// Runs body(tick) without the GIL (the caller holds the table's write lock, so the pipeline's
// calling thread is the only one in the table). The tick re-takes the GIL once per
// kSignalCheckInterval of wall time, as SignalCheck does (not per block: a busy Python thread
// would make each take cost up to its switch interval), to run the signal handlers (main thread
// only) and the progress callback; with neither to run it never takes the GIL; a KeyboardInterrupt (or an exception of the
// callback) stops the run after the block in hand and is raised here. Failed reads and writes
// become OSError with `cuckoo_side` ("input", "output" or "dropped") and `cuckoo_input` (which
// input).
template <class Body>
py::dict run_dedup(DedupCall& c, Body&& body) {
    bool stopped = false;
    const bool on_main_thread = PyThread_get_thread_ident() == main_thread_ident;
    auto tick = [&](const cuckoo::dedup::Result& r) -> bool {
        if (!on_main_thread && c.progress.is_none()) return false;
        py::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) return stopped = true;  // the exception stays set until raised below
        if (!c.progress.is_none()) {
            try {
                c.progress(r.lines, r.bytes);
            } catch (py::error_already_set& e) {
                e.restore();
                return stopped = true;
            }
        }
        return false;
    };
    cuckoo::dedup::Result r;
    int io_errno = 0, io_side = 0;
    size_t io_index = 0;
    {
        py::gil_scoped_release nogil;
        try {
            r = body(c, cuckoo::dedup::Pipeline::Tick(tick));
        } catch (const cuckoo::dedup::Stopped&) {
            // stopped is true: the Python exception is set
        } catch (const cuckoo::dedup::IoError& e) {
            io_errno = e.code().value();
            io_side = e.side;
            io_index = e.index;
        }
    }
    if (stopped) throw py::error_already_set();
    if (io_errno) {
        py::object err = py::reinterpret_borrow<py::object>(PyExc_OSError)(io_errno, std::strerror(io_errno));
        static const char* const sides[] = {"input", "output", "dropped"};
        err.attr("cuckoo_side") = sides[io_side];
        err.attr("cuckoo_input") = io_index;
        PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(err.ptr())), err.ptr());
        throw py::error_already_set();
    }
    static const char* const statuses[] = {"done", "full", "key_too_long"};
    py::dict d;
    d["lines"] = r.lines;
    d["kept"] = r.kept;
    d["bytes"] = r.bytes;
    d["expected_false"] = r.expected_false;
    d["status"] = statuses[static_cast<int>(r.status)];
    return d;
}

}  // namespace cuckoo_py

#endif  // !defined(_WIN32)
