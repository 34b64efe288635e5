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

#if !defined(_WIN32)
// A run journal's point (cuckoo/dedup/run_journal.hpp) as a dict of its fields, and back.
inline py::dict run_point_dict(const cuckoo::dedup::RunPoint& p) {
    py::dict d;
    d["run_id"] = p.run_id;
    d["sequence"] = p.sequence;
    d["store_log_id"] = p.store_log_id;
    d["store_end"] = p.store_end;
    d["out_bytes"] = p.out_bytes;
    d["dropped_bytes"] = p.dropped_bytes;
    d["input"] = p.input;
    d["input_offset"] = p.input_offset;
    d["input_line"] = p.input_line;
    d["records"] = p.records;
    d["kept"] = p.kept;
    d["done"] = p.done;
    return d;
}
inline cuckoo::dedup::RunPoint run_point_from(const py::dict& d) {
    cuckoo::dedup::RunPoint p;
    p.run_id = d["run_id"].cast<uint64_t>();
    p.sequence = d["sequence"].cast<uint64_t>();
    p.store_log_id = d["store_log_id"].cast<uint64_t>();
    p.store_end = d["store_end"].cast<uint64_t>();
    p.out_bytes = d["out_bytes"].cast<uint64_t>();
    p.dropped_bytes = d["dropped_bytes"].cast<uint64_t>();
    p.input = d["input"].cast<uint64_t>();
    p.input_offset = d["input_offset"].cast<uint64_t>();
    p.input_line = d["input_line"].cast<uint64_t>();
    p.records = d["records"].cast<uint64_t>();
    p.kept = d["kept"].cast<uint64_t>();
    p.done = d["done"].cast<bool>();
    return p;
}
#endif

// The record framing (cuckoo._dedup.engine's native framings): None for whole lines, else a dict
// {"kind": "lines" | "fields" | "csv" | "jsonl", "delimiter": int, "quote": int, "columns": [int],
// "first": int, "last": int, "path": [bytes], "record_end": int} (0-based columns and fields;
// record_end, lines only: the byte a line ends at, '\n' or 0 for `-z`).
inline cuckoo::dedup::Framing framing_from(const py::object& spec) {
    using cuckoo::dedup::FieldKeySpec;
    using cuckoo::dedup::FramingKind;
    cuckoo::dedup::Framing f;
    if (spec.is_none()) return f;
    const py::dict d = spec.cast<py::dict>();
    const std::string kind = d["kind"].cast<std::string>();
    if (kind == "lines") {
        const int end = d.contains("record_end") ? d["record_end"].cast<int>() : '\n';
        if (end != '\n' && end != 0) throw py::value_error("a line ends at '\\n' or at NUL (0)");
        f.record_end = static_cast<unsigned char>(end);
        return f;
    }
    if (kind == "fields") {
        f.kind = FramingKind::fields;
        f.fields.mode = FieldKeySpec::field_range;
        f.fields.first = d["first"].cast<uint32_t>();
        f.fields.last = d["last"].cast<uint32_t>();
    } else if (kind == "csv") {
        f.kind = FramingKind::csv;
        f.fields.mode = FieldKeySpec::csv_columns;
        f.fields.quote = d["quote"].cast<unsigned char>();
        for (const py::handle c : d["columns"].cast<py::list>()) f.fields.columns.push_back(c.cast<uint32_t>());
        if (f.fields.columns.empty()) throw py::value_error("a CSV key needs a column");
    } else if (kind == "jsonl") {
        f.kind = FramingKind::jsonl;
        for (const py::handle m : d["path"].cast<py::list>()) f.json.members.push_back(m.cast<std::string>());
        return f;
    } else {
        throw py::value_error("unknown framing kind: " + kind);
    }
    f.fields.delimiter = d["delimiter"].cast<unsigned char>();
    return f;
}

inline DedupCall dedup_call(const py::list& inputs, int out_fd, int dropped_fd, uint64_t block, unsigned threads,
                            uint64_t max_key, py::object progress, const py::object& framing = py::none()) {
    DedupCall c{{}, out_fd, dropped_fd, {}, std::move(progress)};
    // Each input: (fd, bytes read from it already[, the line number its next byte is on[, that
    // byte's offset, for the run journal]]).
    for (const py::handle item : inputs) {
        const py::tuple t = item.cast<py::tuple>();
        if (t.size() < 2 || t.size() > 4) throw py::value_error("an input is (fd, prefix[, first_line[, first_byte]])");
        const std::string prefix = t[1].cast<py::bytes>();
        cuckoo::dedup::Input in{t[0].cast<int>(), std::vector<unsigned char>(prefix.begin(), prefix.end())};
        if (t.size() >= 3) in.first_line = t[2].cast<uint64_t>();
        if (t.size() == 4) in.first_byte = t[3].cast<uint64_t>();
        c.inputs.push_back(std::move(in));
    }
    c.opt.framing = framing_from(framing);
    if (block == 0 || threads == 0) throw py::value_error("block and threads must be positive");
    c.opt.block = static_cast<size_t>(block);
    c.opt.threads = threads;
    c.opt.max_key = max_key;
    c.opt.tick_every = kSignalCheckInterval;  // the interrupt check's interval (signal_check.hpp)
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
    static const char* const statuses[] = {"done", "full", "key_too_long", "bad_record"};
    py::dict d;
    if (r.status == cuckoo::dedup::Status::bad_record) {
        d["bad_input"] = r.bad_input;
        d["bad_line"] = r.bad_line;
        d["bad_why"] = r.bad_why == cuckoo::dedup::KeyStatus::missing ? "missing" : "invalid";
        d["message"] = r.message;
    }
    d["lines"] = r.lines;
    d["kept"] = r.kept;
    d["bytes"] = r.bytes;
    d["expected_false"] = r.expected_false;
    d["status"] = statuses[static_cast<int>(r.status)];
    return d;
}

}  // namespace cuckoo_py

#endif  // !defined(_WIN32)
