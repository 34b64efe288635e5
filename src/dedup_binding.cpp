// Filter._dedup: the native dedup pipeline through a filter (cpp/include/cuckoo/dedup.hpp). The
// Python side is cuckoo.cli.engine (cuckoo.dedup()).
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

}  // namespace cuckoo_py
