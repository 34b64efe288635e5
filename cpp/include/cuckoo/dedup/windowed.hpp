// Dedup within a window (cuckoo/dedup.hpp has the whole picture): `cuckoo dedup --window N` drops
// a record when its key occurred among the previous N records, `--window DURATION` when it
// occurred less than DURATION earlier in arrival time (`tail -f log | cuckoo dedup --window 10m`).
// The state is a cuckoo::Window (cuckoo/window.hpp): generations of key sets (or filters, when
// approximate) that expire whole, so memory is bounded by the keys of about one window however
// long the stream runs. One pass, streaming, in the pipeline's order; the pipeline hashes the keys
// with the window's hasher, so the window takes the block's hashes as they are.
//
// Arrival time: a block's records arrive together, at the time the calling thread takes the
// block (the pipeline hands a live stream's records over within a tick of their arrival); times
// are the steady clock's seconds, which never go back, so no record is late.
#pragma once

#if !defined(_WIN32)

#include <chrono>
#include <vector>

#include "cuckoo/dedup/pipeline.hpp"
#include "cuckoo/window.hpp"

namespace cuckoo {
namespace dedup {

inline Result with_window(std::vector<Input> inputs, int out_fd, int dropped_fd, Window& window, const Options& opt,
                          Pipeline::Tick tick) {
    Pipeline p(std::move(inputs), out_fd, dropped_fd, window.hasher(), opt, std::move(tick));
    std::vector<WindowVerdict> verdicts;
    std::vector<double> times;
    const auto epoch = std::chrono::steady_clock::now();
    return p.run(
        [&](Block& b, size_t n) -> size_t {
            if (verdicts.size() < n) {
                fault::before_allocation();
                verdicts.resize(n);
            }
            const double* t = nullptr;
            if (!window.is_count()) {
                const double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch).count();
                if (times.capacity() < n) fault::before_allocation();
                times.assign(n, now);
                t = times.data();
            }
            window.see_many(n, [&b](uint64_t j) { return b.key(static_cast<size_t>(j)); }, b.hashes.data(), t,
                            verdicts.data(), [] { return false; });
            for (size_t j = 0; j < n; ++j) b.keep[j] = verdicts[j] != WindowVerdict::duplicate;
            return n;
        },
        [] {}, /*write_behind=*/true);
}

}  // namespace dedup
}  // namespace cuckoo

#endif  // !defined(_WIN32)
