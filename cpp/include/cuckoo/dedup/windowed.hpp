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
//
// Event time (`--time-key FIELD`, keyed records): each record's time is its field's value
// (dedup/time_field.hpp: epoch seconds or ISO 8601), found by a second framing of the record on
// the calling thread. Records may come out of time order: one later than the watermark (the
// largest time seen, less the lateness) is decided as cuckoo::Window says; one behind it is late,
// kept and counted. A record without a time is kept and counted (WindowRun::untimed).
#pragma once

#if !defined(_WIN32)

#include <chrono>
#include <vector>

#include "cuckoo/dedup/pipeline.hpp"
#include "cuckoo/dedup/time_field.hpp"
#include "cuckoo/window.hpp"

namespace cuckoo {
namespace dedup {

// What a windowed run saw besides the pipeline's counts: records whose time field was missing or
// not a time (kept: the window cannot place them, and dropping one could drop it wrongly).
struct WindowRun {
    uint64_t untimed = 0;
};

// `time_field` (event time, `--time-key`): the framing that finds each record's time field (a
// keyed framing of the run's kind, dedup/framing.hpp); nullptr: a count window, or arrival time.
inline Result with_window(std::vector<Input> inputs, int out_fd, int dropped_fd, Window& window, const Options& opt,
                          Pipeline::Tick tick, const Framing* time_field = nullptr, WindowRun* info = nullptr) {
    // Blocks of 16 Ki lines with producers, as the filter path's: the window's state is small, and
    // the blocks in flight were a fifth of the run's memory (1 MiB blocks: a count window of 10^6
    // over 10^7 hex lines, 73.7 MiB peak RSS with 4 generations; 67.8 MiB in blocks of 16 Ki lines).
    Options sized = opt;
    if (opt.threads > 1 && !sized.lines_per_block) sized.lines_per_block = kStreamLinesPerBlock;
    Pipeline p(std::move(inputs), out_fd, dropped_fd, window.hasher(), sized, std::move(tick));
    std::vector<WindowVerdict> verdicts;
    std::vector<double> times;
    // Event time: the records with a time, their hashes and times in a row for see_many.
    std::vector<uint32_t> timed;
    std::vector<uint64_t> timed_hashes;
    KeyScratch scratch;
    WindowRun run;
    const auto epoch = std::chrono::steady_clock::now();
    Result r = p.run(
        [&](Block& b, size_t n) -> size_t {
            if (verdicts.size() < n || times.size() < n) {
                fault::before_allocation();
                verdicts.resize(n);
                times.resize(n);
            }
            if (window.is_count()) {
                window.see_many(n, [&b](uint64_t j) { return b.key(static_cast<size_t>(j)); }, b.hashes.data(),
                                nullptr, verdicts.data(), [] { return false; });
            } else if (!time_field) {  // arrival time: the block's
                const double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch).count();
                std::fill(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(n), now);
                window.see_many(n, [&b](uint64_t j) { return b.key(static_cast<size_t>(j)); }, b.hashes.data(),
                                times.data(), verdicts.data(), [] { return false; });
            } else {
                if (timed.size() < n) {
                    fault::before_allocation();
                    timed.resize(n);
                    timed_hashes.resize(n);
                }
                const unsigned char* const data = b.data.p.get();
                size_t m = 0, start = 0;
                for (size_t j = 0; j < n; ++j) {
                    const size_t end = static_cast<size_t>(b.line_end[j]);
                    const uint64_t local_end = end - start;
                    KeyRef ref;
                    FrameStop stop;
                    double t;
                    const bool found = frame_records(*time_field, data + start, 0, &local_end, 1, &ref, scratch, stop) == 1;
                    if (found && parse_time(scratch.keys.data() + ref.off, static_cast<size_t>(ref.len), t) &&
                        window.time_ok(t)) {
                        timed[m] = static_cast<uint32_t>(j);
                        timed_hashes[m] = b.hashes[j];
                        times[m++] = t;
                    } else {
                        b.keep[j] = true;  // (no time: kept)
                        ++run.untimed;
                    }
                    start = end;
                }
                window.see_many(m, [&](uint64_t k) { return b.key(timed[k]); }, timed_hashes.data(), times.data(),
                                verdicts.data(), [] { return false; });
                for (size_t k = 0; k < m; ++k) b.keep[timed[k]] = verdicts[k] != WindowVerdict::duplicate;
                return n;
            }
            for (size_t j = 0; j < n; ++j) b.keep[j] = verdicts[j] != WindowVerdict::duplicate;
            return n;
        },
        [] {}, /*write_behind=*/true);
    if (info) *info = run;
    return r;
}

}  // namespace dedup
}  // namespace cuckoo

#endif  // !defined(_WIN32)
