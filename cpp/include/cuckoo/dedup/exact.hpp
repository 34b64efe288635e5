// The exact dedup path in memory (cuckoo/dedup.hpp has the whole picture): an in-memory key set
// under a memory budget, in passes over hash ranges for input that can be read again, or moving
// its keys to a store on an anonymous file for input read once.
#pragma once

#if !defined(_WIN32)

#include "cuckoo/dedup/tables.hpp"
#include "cuckoo/key_set.hpp"

namespace cuckoo {
namespace dedup {

// ---- exact dedup in memory, in passes over hash ranges ----
//
// The exact path for inputs that can be read again (regular files): the distinct keys go to a
// KeySet (cuckoo/key_set.hpp: in memory, nothing on disk) under a memory budget. A pass reads the
// whole input and decides the lines whose key falls in one range of the hash space (the whole
// space at first): equal keys have equal hashes, so a range's lines are decided exactly as if it
// were alone. When the set passes the budget, its range splits in two halves: the set keeps the
// lower half (KeySet::retain, in place) and goes on; the upper half waits for a pass of its own,
// from the first line after the split on (its lines before were decided in this pass, and are
// written). So a run whose keys fit is one pass, streaming, and one that does not reads the input
// once more per range it had to set aside, holding at most about the budget.
//
// Output: a line is written by the first pass after which every range has decided it, in input
// order: the pass writes up to the earliest line a waiting range has not decided, and the next
// pass (that range's) goes on from there. Decisions that wait for their writing pass are kept as
// one bit a line.

struct ExactRun {
    unsigned passes = 0;
    uint64_t planned = 1;         // ranges planned before the first pass (planned_parts)
    uint64_t splits = 0;          // ranges set aside (the planned ones but the first included)
    uint64_t distinct = 0;        // keys kept over all ranges (the lines written as new)
    uint64_t peak_set_bytes = 0;  // the most memory the key set held (KeySet::memory_bytes)
    uint64_t grows = 0;           // index growths (a low expected_keys)
    // Input that cannot be read again (Spill): the key set's keys moved to a store at this many
    // lines (~0: they never did), and that store's figures at the end.
    uint64_t spilled_at_line = ~uint64_t(0);
    uint64_t spilled_keys = 0;  // the keys moved
    StoreStats store;           // that store's
};

// The exact path over input that cannot be read again (a pipe, decompressed input): there are no
// passes, so the run keeps every key in one key set while it fits the budget; past it, the keys
// move to a store on an anonymous file (cuckoo/store.hpp: an index in memory, ~12 bytes a key with
// its hash bits, the keys in the file) and the run goes on through it. The caller's opt.max_key
// is then the store's key limit: a longer key stops the run (Status::key_too_long), as on the
// store path, whether or not the keys moved. Moving holds the key sets and the store's index at
// once, for a moment.
struct Spill {
    int fd = -1;          // an empty, read-write file (-1: the inputs can be read again: passes)
    uint64_t log_id = 0;  // the store log's identity (random, from the caller)
    // The blocks read once the keys moved: the store verifies a block's tag matches in one pass
    // over its log, so larger blocks read it fewer times. Measured (Zen 4, 10^7 URL lines through
    // a pipe, --memory 96M, 2 runs each): blocks of 1 MiB 7.2-7.5 s, of 4 MiB 4.2-4.8 s.
    size_t block = size_t(4) << 20;
};

// A range of the hash space: the keys whose position (range_position) is in [lo, hi].
struct HashRange {
    uint64_t lo = 0, hi = ~uint64_t(0);
    uint64_t from_line = 0;  // its lines before this were decided by the pass that set it aside
    bool holds(uint64_t position) const noexcept { return lo <= position && position <= hi; }
    // The k-th of `parts` equal pieces (the last one takes the rounding).
    HashRange piece(uint64_t k, uint64_t parts, uint64_t from) const noexcept {
        const uint64_t width = (hi - lo) / parts;
        return HashRange{lo + k * width, k + 1 == parts ? hi : lo + (k + 1) * width - 1, from};
    }
};

// The hash-space position of a key: its hash mixed again, so that the ranges do not follow the
// bits that pick its buckets and tag (the low and high halves of the hash itself).
inline uint64_t range_position(uint64_t h) noexcept { return mix64(h ^ 0x5851F42D4C957F2Dull); }

// A second thread for the exact path's second key set: runs one job at a time for the calling
// thread (fork and join once a block: a block is milliseconds of work, the hand-over
// microseconds). It blocks every signal, as the producers do; a job's exception is rethrown by
// wait().
class HelperThread {
public:
    HelperThread() {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        try {
            thread_ = std::thread([this] { loop(); });
        } catch (...) {
            pthread_sigmask(SIG_SETMASK, &old, nullptr);
            throw;
        }
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
    }
    ~HelperThread() {
        {
            std::lock_guard<std::mutex> g(m_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    HelperThread(const HelperThread&) = delete;
    HelperThread& operator=(const HelperThread&) = delete;
    void start(std::function<void()> job) {
        {
            std::lock_guard<std::mutex> g(m_);
            job_ = std::move(job);
            busy_ = true;
        }
        cv_.notify_all();
    }
    void wait() {
        std::unique_lock<std::mutex> g(m_);
        cv_.wait(g, [&] { return !busy_; });
        if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    }

private:
    void loop() {
        std::unique_lock<std::mutex> g(m_);
        while (true) {
            cv_.wait(g, [&] { return stop_ || busy_; });
            if (stop_) return;
            std::function<void()> job = std::move(job_);
            g.unlock();
            std::exception_ptr e;
            try {
                job();
            } catch (...) {
                e = std::current_exception();
            }
            g.lock();
            error_ = e;
            busy_ = false;
            cv_.notify_all();
        }
    }
    std::mutex m_;
    std::condition_variable cv_;
    std::function<void()> job_;
    bool busy_ = false, stop_ = false;
    std::exception_ptr error_;
    std::thread thread_;
};

// Every input moved back to where the run started reading it, for a pass more.
inline void rewind_inputs(const std::vector<Input>& inputs, const std::vector<int64_t>& starts) {
    for (size_t i = 0; i < inputs.size(); ++i)
        if (inputs[i].fd >= 0 && ::lseek(inputs[i].fd, static_cast<off_t>(starts[i]), SEEK_SET) < 0)
            throw IoError(errno, 0, i, "cannot read input again");
}

// A pass's tick: the caller's, seeing the lines and bytes of the passes before (`read_before`,
// read when it is called) added to the pass's own, so that its rates stay rates.
inline Pipeline::Tick ticks_after(const Pipeline::Tick& tick, const Result& read_before) {
    if (!tick) return {};
    return [&tick, &read_before](const Result& now) {
        Result sum = now;
        sum.lines += read_before.lines;
        sum.bytes += read_before.bytes;
        return tick(sum);
    };
}

// Runs mine() on the calling thread and, when `helper` is given, theirs() on it at once (the two
// key sets of a pass's lanes); rethrows the calling thread's error first, else the helper's.
template <class Mine, class Theirs>
void on_both_threads(HelperThread* helper, Mine&& mine, Theirs&& theirs) {
    if (!helper) return mine();
    helper->start([&] { theirs(); });
    try {
        mine();
    } catch (...) {
        helper->wait();  // (its own error, if any, gives way to this one)
        throw;
    }
    helper->wait();
}

// Exact dedup of `inputs` (each read from `starts[i]` again for every pass after the first: the
// caller's regular files; -1 for an input given whole as its prefix). `budget`: bytes the key sets
// may hold before the pass's range splits (it is not a hard limit: a range of one hash cannot
// split, and each pass needs a few blocks of input besides); `expected_keys`: a size hint for the
// first pass's index; `mean_key_bytes` (0: unknown): the keys' mean length, with which the
// expected keys plan the passes (below). The input must not change between passes: a pass that
// reads a different number of lines or bytes throws InputChanged (its output so far is then not
// to be used).
//
// Passes planned ahead: when the expected keys need more than the budget, the hash space is
// shared out into as many ranges as they need before the first pass. A split during a pass costs
// more: the keys of the half set aside were inserted for nothing up to there, and the set is
// compacted and its index rebuilt (10^7 hex lines, 4.3 M distinct, under 128M: 2.31 s in two
// passes split during the first, 1.12 s in two planned ones). Then the first pass writes nothing:
// every line waits for the pass of the last range, the decisions of the others kept as bits. An
// estimate that was low is mended by splits during the passes, as without a plan; one that was
// high costs a pass where the keys would just have fitted (the estimate that sizes the set errs
// high on purpose: an index that grows holds its old and new tables at once).
//
// With opt.threads >= 2 the pass's range is shared by two key sets ("lanes", the lower and the
// upper half), filled by the calling thread and a HelperThread: each lane decides its lines in
// order, and equal keys fall in one lane, so the answers are those of one set. (The key set was
// the pipeline's bottleneck: one thread applying it took as long with a producer thread as
// without.) A split keeps the lower half of the pass's range and shares it out again: the lower
// lane keeps the lower quarter and hands the keys of the second quarter to the upper lane.

// The ranges a waiting range of `expected_bytes` (and `expected_keys`) needs under the budget,
// measured from the density of the ranges done. That count is a sum over many keys, so it errs
// by about 1/sqrt(keys): the ranges are filled to within three of those errors of the budget
// (97% at most, for the stash and the index's rounding; 90% for sets of fewer than ~900 keys).
// At 90% (as planned_parts was), text whose keys needed 96.5% of the budget in each half took
// three passes instead of two.
inline uint64_t measured_parts(double expected_bytes, double expected_keys, double budget) noexcept {
    const double fill = std::min(0.97, std::max(0.9, 1.0 - 3.0 / std::sqrt(std::max(expected_keys, 1.0))));
    return static_cast<uint64_t>(std::min(64.0, std::max(1.0, std::ceil(expected_bytes / (fill * budget)))));
}

// The ranges the expected keys need under the budget (1 when unknown, or when they fit), filled
// as measured_parts fills them. (At 90% of the budget, with the mean line for the keys' mean
// length, the plan was right on the benchmark's text only because the two errors cancelled: its
// distinct keys are 51 bytes long, its mean line 30. With the distinct keys' mean from the sample,
// 47 bytes, at 90%: 4 ranges planned under 64M where 3 fitted, 3 under 96M where 2 did.)
inline uint64_t planned_parts(uint64_t expected_keys, double mean_key_bytes, uint64_t budget) noexcept {
    if (expected_keys == 0 || mean_key_bytes <= 0 || budget == 0) return 1;
    const double need = KeySet::expected_bytes(static_cast<double>(expected_keys), mean_key_bytes);
    if (need <= static_cast<double>(budget)) return 1;
    return measured_parts(need, static_cast<double>(expected_keys), static_cast<double>(budget));
}

inline Result with_key_set(const std::vector<Input>& inputs, const std::vector<int64_t>& starts, int out_fd,
                           int dropped_fd, const KeyHasher& hasher, const Options& opt, uint64_t budget,
                           uint64_t expected_keys, Pipeline::Tick tick, ExactRun* info = nullptr,
                           double mean_key_bytes = 0, const Spill& spill = Spill{}) {
    if (starts.size() != inputs.size()) throw std::invalid_argument("with_key_set: one start offset per input");
    ExactRun run;
    const unsigned lanes = opt.threads >= 2 ? 2 : 1;
    const bool one_pass = spill.fd >= 0;
    std::vector<Input> pass_inputs = inputs;  // (after the first pass: limited to what it read)
    uint64_t first_keys_digest = 0;
    // (Input read once, expected not to fit: the store from the start.)
    bool spill_first = one_pass && planned_parts(expected_keys, mean_key_bytes, budget) > 1;
    const uint64_t planned = one_pass ? 1 : planned_parts(expected_keys, mean_key_bytes, budget);
    struct Lane {
        HashRange range;
        std::unique_ptr<KeySet> set;
        std::vector<uint32_t> picked;  // its lines of the block in hand (picked_count of them)
        size_t picked_count = 0;
    };
    // Each index sized for its share of the expected keys, but no more than the budget holds at
    // the keys' mean length (~40 bytes a key when it is unknown: 8.5 of index, a short key and its
    // length): an index sized for keys that do not fit would take the budget from them, and no
    // split gives it back. (At 40 bytes for 8-byte keys, planned ranges of 10,800 keys each got
    // indexes for 5,000 that grew, holding their old and new tables at once: past the budget.)
    const double key_bytes = mean_key_bytes > 0 ? KeySet::expected_bytes(1.0, mean_key_bytes) : 40.0;
    const uint64_t fitting_keys = static_cast<uint64_t>(static_cast<double>(budget) / key_bytes);
    std::vector<Lane> lane(lanes);
    for (Lane& l : lane) {
        fault::before_allocation();
        l.set.reset(new KeySet(hasher, std::min(expected_keys / planned, fitting_keys) / lanes));
    }
    std::unique_ptr<HelperThread> helper;
    if (lanes > 1) {
        fault::before_allocation();
        helper.reset(new HelperThread());
    }
    auto set_bytes = [&] {
        uint64_t b = 0;
        for (const Lane& l : lane) b += l.set->memory_bytes();
        return b;
    };
    // Spill: the store, once the keys moved there (the key sets then freed).
    std::unique_ptr<Store> store;
    Pipeline* pipeline = nullptr;  // the pass's (one pass when the keys can move)
    std::vector<KeySpan> spans;  // a block's keys (or a chunk of the moved ones), as the store takes them
    std::vector<uint64_t> span_hashes;
    auto move_to_store = [&](uint64_t at_line) {
        Store::Options so;
        so.seed = hasher.seed;
        so.algorithm = hasher.algorithm;
        so.log_id = spill.log_id;
        std::unique_ptr<Store> s = Store::on_fd(spill.fd, so);
        s->keep_index_bits();  // (it grows as the input goes on, never reading its log back)
        uint64_t keys = 0;
        for (const Lane& l : lane) keys += l.set->size();
        s->reserve(keys + keys / 2 + 1024);
        constexpr size_t kChunk = 4096;
        fault::before_allocation();
        spans.reserve(kChunk);
        span_hashes.reserve(kChunk);
        std::unique_ptr<bool[]> added(new bool[kChunk]);
        auto flush = [&] {
            uint64_t done = 0;
            s->apply_chunk(Store::Op::AddUnique, spans.size(), spans.data(), span_hashes.data(), nullptr, added.get(),
                           done);
            spans.clear();
            span_hashes.clear();
        };
        for (Lane& l : lane) {
            l.set->for_each_key([&](KeySpan k) {
                spans.push_back(k);
                span_hashes.push_back(hasher.hash_key(k.data, k.len));
                if (spans.size() == kChunk) flush();
            });
            flush();
        }
        run.spilled_at_line = at_line;
        run.spilled_keys = keys;
        store = std::move(s);
        if (pipeline) pipeline->set_block_size(spill.block);
        for (Lane& l : lane) l.set.reset(new KeySet(hasher));  // (the memory back: an empty set)
    };
    auto share_out = [&](const HashRange& r) {  // the lanes' ranges: r in `lanes` equal pieces
        for (unsigned a = 0; a < lanes; ++a) lane[a].range = r.piece(a, lanes, r.from_line);
    };
    std::vector<HashRange> waiting;
    for (uint64_t k = 0; k < planned; ++k) waiting.push_back(HashRange{}.piece(k, planned, 0));
    run.planned = planned;
    run.splits = planned - 1;
    // The key sets' bytes and keys over the ranges done, and those ranges' width.
    double done_bytes = 0, done_keys = 0, done_width = 0;
    std::vector<uint64_t> decided;  // bit k: line k kept (lines decided ahead of their writing pass)
    std::vector<unsigned char> owner;  // a block's lines: the lane deciding it, or kNoLane
    constexpr unsigned char kNoLane = 0xFF;
    uint64_t written_to = 0;  // lines before it are written
    Result total, read_before;  // (read_before: the lines and bytes of the passes done)
    // The last tick of the passes done: each pass's ticks go on from it (passes shorter than a
    // tick would otherwise never check for signals or report progress).
    auto last_tick = std::chrono::steady_clock::now();
    bool first = true;
    while (!waiting.empty()) {
        // The range that waited from the earliest line: the writing goes on from there.
        auto next = std::min_element(waiting.begin(), waiting.end(),
                                     [](const HashRange& a, const HashRange& b) { return a.from_line < b.from_line; });
        HashRange range = *next;
        waiting.erase(next);
        // A range that waited is as dense in keys as the ranges done (keys spread evenly over the
        // hash space): when it is expected not to fit, it splits before its pass, not during it
        // (where the lines read before the split would be read for nothing). Its lanes' indexes
        // are sized for the keys expected, so that the memory the pass holds is what they need.
        uint64_t lane_keys = 0;  // (0: nothing known, the indexes stay as they are)
        if (done_width > 0) {
            const double share = (static_cast<double>(range.hi - range.lo) + 1.0) / done_width;
            const double expected = done_bytes * share, keys = done_keys * share;
            const uint64_t parts =
                measured_parts(expected, keys, static_cast<double>(std::max<uint64_t>(budget, 1)));
            if (parts > 1 && range.hi - range.lo > 1024 * parts) {
                for (uint64_t k = 1; k < parts; ++k) waiting.push_back(range.piece(k, parts, range.from_line));
                range = range.piece(0, parts, range.from_line);
                run.splits += parts - 1;
                lane_keys = static_cast<uint64_t>(keys * 1.02 / static_cast<double>(parts * lanes)) + 1;
            } else {
                lane_keys = static_cast<uint64_t>(keys * 1.02 / lanes) + 1;
            }
        }
        share_out(range);
        for (Lane& l : lane) {
            if (lane_keys)
                l.set->clear(lane_keys);
            else
                l.set->clear();
        }
        if (!first) rewind_inputs(inputs, starts);
        ++run.passes;
        // Lines from `limit` on may still be undecided (a waiting range's): not written yet.
        auto limit = [&] {
            uint64_t l = ~uint64_t(0);
            for (const HashRange& w : waiting) l = std::min(l, w.from_line);
            return l;
        };
        uint64_t base = 0;  // the block's first line
        uint64_t keys_digest = 0;
        const Pipeline::Tick pass_tick = ticks_after(tick, read_before);
        Pipeline p(pass_inputs, out_fd, dropped_fd, hasher, opt, pass_tick);
        p.continue_ticks_from(last_tick);
        pipeline = &p;
        Result r = p.run(
            [&](Block& b, size_t n) -> size_t {
                if (spill_first) {
                    spill_first = false;
                    move_to_store(0);
                }
                if (store) {  // (one pass, one range: every line is decided and written now)
                    add_block_to_store(*store, b, n, spans);
                    b.write_from = 0;
                    b.write_to = n;
                    base += n;
                    written_to = base;
                    return n;
                }
                if (!first && base + n > total.lines)
                    throw InputChanged("the input changed while it was read again (more lines)");
                // The pass's digest of its keys in order: a later pass that reads other keys (a
                // file rewritten in place, its length unchanged) stops as one that reads other
                // lines does. (An add and a multiply a line, over hashes computed anyway.)
                const uint64_t* const key_hash = b.hashes.data();
                for (size_t j = 0; j < n; ++j) keys_digest += key_hash[j] * (2 * (base + j) + 1);
                if (owner.capacity() < n) fault::before_allocation();
                owner.resize(n);
                for (Lane& l : lane) {
                    if (l.picked.size() < n + 1) {  // (+ 1: the write past the end below)
                        fault::before_allocation();
                        l.picked.resize(n + 1);
                    }
                }
                // Each line's lane, without a branch a line (in a later pass, whether a line is in
                // the pass's range is a coin toss): every line is written one past the end of
                // both lists, and a list's count moves on when it is that list's.
                uint32_t* const list0 = lane[0].picked.data();
                uint32_t spare = 0;  // (one lane: the second list's writes land here)
                uint32_t* const list1 = lanes > 1 ? lane[1].picked.data() : &spare;
                const uint64_t lo0 = lane[0].range.lo, width0 = lane[0].range.hi - lo0;
                const uint64_t lo1 = lane[lanes - 1].range.lo, width1 = lane[lanes - 1].range.hi - lo1;
                size_t count0 = 0, count1 = 0;
                for (size_t j = 0; j < n; ++j) {
                    const uint64_t pos = range_position(b.hashes[j]);
                    const bool in0 = pos - lo0 <= width0;  // lo <= pos <= hi, in one comparison
                    const bool in1 = lanes > 1 && pos - lo1 <= width1;
                    owner[j] = in1 ? 1 : in0 ? 0 : kNoLane;
                    list0[count0] = static_cast<uint32_t>(j);
                    count0 += in0;
                    list1[count1] = static_cast<uint32_t>(j);
                    count1 += in1;
                }
                lane[0].picked_count = count0;
                if (lanes > 1) lane[1].picked_count = count1;
                const size_t picked = count0 + (lanes > 1 ? count1 : 0);
                // The lanes write the kept flags of their lines only; the others' are read (and
                // masked off) by the branchless loops below, so they hold a defined value.
                if (picked < n) std::memset(b.keep.get(), 0, n);
                auto fill = [&b](Lane& l) {
                    l.set->insert_unique(static_cast<uint32_t>(l.picked_count), l.picked.data(),
                                         [&b](size_t j) { return b.key(j); }, b.hashes.data(), b.keep.get());
                };
                on_both_threads(lanes > 1 && lane[1].picked_count ? helper.get() : nullptr, [&] { fill(lane[0]); },
                                [&] { fill(lane[1]); });
                // Decisions a later pass writes (lines from the limit on) are kept.
                const uint64_t lim = limit();
                if (base + n > lim) {
                    const uint64_t words = (base + n + 63) / 64;
                    if (decided.size() < words) {
                        fault::before_allocation();
                        decided.resize(std::max<size_t>(words, decided.size() * 3 / 2));
                    }
                    for (uint64_t line = std::max(lim, base); line < base + n; ++line) {
                        const size_t j = static_cast<size_t>(line - base);
                        const uint64_t mine = uint64_t(owner[j] != kNoLane) << (line % 64);  // (no branch)
                        const uint64_t kept = uint64_t(b.keep[j]) << (line % 64);
                        decided[line / 64] = (decided[line / 64] & ~mine) | (kept & mine);
                    }
                }
                const uint64_t bytes = set_bytes();
                run.peak_set_bytes = std::max(run.peak_set_bytes, bytes);
                // Over budget: the range splits in halves; the lanes keep the lower one and the
                // upper one waits for a pass of its own (its lines so far are decided).
                uint64_t keys = 0;
                for (const Lane& l : lane) keys += l.set->size();
                if (one_pass && bytes > budget) {
                    move_to_store(base + n);  // (this block's lines are decided: written below)
                } else if (bytes > budget && keys > 1 && range.hi - range.lo > 1024) {
                    waiting.push_back(range.piece(1, 2, base + n));
                    range = range.piece(0, 2, range.from_line);
                    ++run.splits;
                    share_out(range);
                    if (lanes == 1) {
                        lane[0].set->retain([&](uint64_t h) { return lane[0].range.holds(range_position(h)); });
                    } else {
                        // The upper lane's keys all leave; the lower lane's upper half goes to it.
                        lane[1].set->clear();
                        lane[0].set->retain([&](uint64_t h) { return lane[0].range.holds(range_position(h)); },
                                            [&](KeySpan key, uint64_t h) {
                                                if (lane[1].range.holds(range_position(h))) lane[1].set->add(key, h);
                                            });
                    }
                }
                // Lines no earlier pass wrote, up to the limit, are decided now: those of other
                // ranges by an earlier pass (their bits).
                const uint64_t from = std::max(written_to, base), to = std::min(limit(), base + n);
                if (from < to) {
                    if (picked < n) {
                        for (uint64_t line = from; line < to; ++line) {
                            const size_t j = static_cast<size_t>(line - base);
                            const bool earlier = (decided[line / 64] >> (line % 64)) & 1;
                            b.keep[j] = owner[j] == kNoLane ? earlier : b.keep[j];  // (a select)
                        }
                    }
                    b.write_from = static_cast<size_t>(from - base);
                    b.write_to = static_cast<size_t>(to - base);
                    written_to = to;
                } else {
                    b.write_from = b.write_to = 0;
                }
                base += n;
                return n;
            },
            [] {}, /*write_behind=*/true);
        pipeline = nullptr;
        last_tick = p.last_tick();
        if (!first && (r.lines != total.lines || r.bytes != total.bytes || keys_digest != first_keys_digest))
            throw InputChanged("the input changed while it was read again (fewer or other lines)");
        if (first) {
            total.lines = r.lines;
            total.bytes = r.bytes;
            total.status = r.status;
            total.bad_input = r.bad_input;
            total.bad_line = r.bad_line;
            total.bad_why = r.bad_why;
            total.message = r.message;
            first_keys_digest = keys_digest;
            for (size_t i = 0; i < pass_inputs.size(); ++i) pass_inputs[i].limit = p.bytes_read_from_fds()[i];
        }
        total.kept += r.kept;
        read_before.lines += r.lines;
        read_before.bytes += r.bytes;
        for (const Lane& l : lane) {
            run.distinct += l.set->size();
            done_bytes += static_cast<double>(l.set->needed_bytes());
            done_keys += static_cast<double>(l.set->size());
        }
        if (store) {
            run.distinct += store->size();
            run.store = store->stats();
        }
        done_width += static_cast<double>(range.hi - range.lo) + 1.0;
        first = false;
        // A key too long for the store (input read once: one pass) ends the run. A record that
        // cannot be keyed stops every pass at the same record, so the ranges set aside still
        // decide (and write) the records before it.
        if (r.status == Status::key_too_long) break;
    }
    for (const Lane& l : lane) run.grows += l.set->grows();
    if (info) *info = run;
    return total;
}

}  // namespace dedup
}  // namespace cuckoo

#endif  // !defined(_WIN32)
