// Filter._dedup: the native dedup pipeline through a filter, and _core._dedup_exact: the exact
// path through an in-memory key set, in passes under a memory budget (cpp/include/cuckoo/dedup.hpp).
// The Python side is cuckoo.cli.engine (cuckoo.dedup()).
#include "dedup_binding.hpp"

#include "filter_binding.hpp"

namespace cuckoo_py {

void register_dedup(FilterClass& cls) {
#if defined(_WIN32)
    (void)cls;  // the pipeline reads and writes POSIX file descriptors: the Python path runs instead
#else
    cls.def("_dedup", [](PyFilter& self, const py::list& inputs, int out_fd, int dropped_fd, uint64_t block,
                         unsigned threads, py::object progress) {
        DedupCall c = dedup_call(inputs, out_fd, dropped_fd, block, threads, ~uint64_t(0), std::move(progress));
        WriteLock lock(self);
        std::pair<std::string, const char*> why;
        py::dict d = run_dedup(c, [&](DedupCall& call, cuckoo::dedup::Pipeline::Tick tick) {
            cuckoo::dedup::Result r = cuckoo::dedup::with_filter(self.core, std::move(call.inputs), call.out_fd,
                                                                 call.dropped_fd, call.opt, std::move(tick));
            if (r.status == cuckoo::dedup::Status::full) why = failure_text(self.core);  // under the lock
            return r;
        });
        if (why.second) {
            d["message"] = "filter is full: " + why.first;
            d["reason"] = why.second;
        }
        return d;
    }, py::arg("inputs"), py::arg("out_fd"), py::arg("dropped_fd"), py::arg("block"), py::arg("threads"),
       py::arg("progress"));
#endif
}

void register_dedup_exact(py::module_& m) {
#if defined(_WIN32)
    (void)m;
#else
    // inputs: (fd, bytes read from it already) pairs, each fd readable again from starts[i]
    // (regular files); memory: the key set's budget in bytes; expected: a size hint (keys);
    // seed: the hash seed (the caller draws one from the OS: an anonymous set persists nothing).
    m.def("_dedup_exact", [](const py::list& inputs, int out_fd, int dropped_fd, const py::list& start_list,
                             uint64_t block, unsigned threads, uint64_t memory, uint64_t expected, uint64_t seed,
                             py::object progress) {
        DedupCall c = dedup_call(inputs, out_fd, dropped_fd, block, threads, ~uint64_t(0), std::move(progress));
        std::vector<int64_t> starts;
        for (const py::handle x : start_list) starts.push_back(x.cast<int64_t>());
        if (starts.size() != c.inputs.size()) throw py::value_error("one start offset per input");
        cuckoo::dedup::ExactRun info;
        std::string changed;
        py::dict d = run_dedup(c, [&](DedupCall& call, cuckoo::dedup::Pipeline::Tick tick) {
            try {
                return cuckoo::dedup::with_key_set(call.inputs, starts, call.out_fd, call.dropped_fd,
                                                   cuckoo::KeyHasher{seed}, call.opt, memory, expected,
                                                   std::move(tick), &info);
            } catch (const cuckoo::dedup::InputChanged& e) {
                changed = e.what();
                return cuckoo::dedup::Result{};
            }
        });
        if (!changed.empty()) throw py::value_error(changed);
        d["passes"] = info.passes;
        d["splits"] = info.splits;
        d["distinct"] = info.distinct;
        d["peak_memory"] = info.peak_set_bytes;
        d["grows"] = info.grows;
        return d;
    }, py::arg("inputs"), py::arg("out_fd"), py::arg("dropped_fd"), py::arg("starts"), py::arg("block"),
       py::arg("threads"), py::arg("memory"), py::arg("expected"), py::arg("seed"), py::arg("progress"));
#endif
}

}  // namespace cuckoo_py
