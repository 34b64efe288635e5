// The streaming dedup pipeline (`cuckoo dedup`, cuckoo.dedup()): reads input file descriptors in
// large blocks, splits each block into lines (a vector scan for newlines), hashes the keys a block
// at a time with the filter's or store's own hasher (hash_block.hpp: the same value as Filter.add / Store take for
// the same bytes), applies the filter's or store's batch insert in input order, and writes the kept
// lines (and, optionally, the dropped ones) with one write() per block.
//
// Threads: with threads = N > 1, N - 1 producer threads each take the next block off the input (the
// reads themselves are serialised by a mutex, in input order), split and hash it, and hand it to
// the calling thread, which applies the blocks strictly in sequence and writes their output. So
// the answers never depend on N: the only state that changes (the filter or store) is touched by
// one thread, in input order. With N = 1 the calling thread does everything. For a filter and an
// anonymous store (nothing recorded once written), a writer thread gathers and writes the applied
// blocks in order, so the calling thread only applies: it was the bottleneck (the inserts) and
// also did the gathering copies and write() calls. With N = 2, for a filter, the producer also
// prefetches the table's buckets for the block taken next (BucketWarmer).
//
// Lines: a line ends at '\n'; its key is the line without the '\n' and one '\r' before it. A last
// line without '\n' gets a '\n' in the block (virtual); the output drops it again when the line
// is the last of the last input (a '\n' is added when more input follows it). Lines longer than a
// block are read whole (the block grows for them). Bytes are never decoded: NUL bytes and empty
// lines are keys like any other.
//
// POSIX only (read/write/poll on file descriptors), like the store; elsewhere the Python block path
// runs instead.
#pragma once

#if !defined(_WIN32)

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include "cuckoo/fault.hpp"
#include "cuckoo/hash_block.hpp"
#include "cuckoo/key_set.hpp"
#include "cuckoo/staged.hpp"
#include "cuckoo/store.hpp"

namespace cuckoo {
namespace dedup {

// An input or output that failed: `side` is 0 for an input (`index`: which), 1 for the kept
// output, 2 for the dropped output; the errno is the system_error's code.
struct IoError : std::system_error {
    IoError(int err, int side_, size_t index_, const char* what)
        : std::system_error(err, std::generic_category(), what), side(side_), index(index_) {}
    int side;
    size_t index;
};

// Thrown out of the pipeline's waits when the caller's tick() asked to stop (an interrupt).
struct Stopped {};

// The exact path's later passes read other lines or bytes than the first (the input changed).
struct InputChanged : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Options {
    size_t block = size_t(1) << 20;  // bytes read at a time
    unsigned threads = 1;            // 1: all in the calling thread; N: N - 1 producers
    uint64_t max_key = ~uint64_t(0);  // a longer key stops the run after the lines before it
    // How often (at least) the calling thread calls tick() while it works or waits.
    std::chrono::milliseconds tick_every{50};
    // With producers: blocks of about this many lines (0: `block` bytes each), sized from the
    // first block's mean line, between kMinAdaptiveBlock and `block` bytes.
    size_t lines_per_block = 0;
};

// The smallest block lines_per_block sizes (unless `block` is smaller).
constexpr size_t kMinAdaptiveBlock = size_t(256) << 10;

enum class Status { done, full, key_too_long };

struct Result {
    uint64_t lines = 0;  // lines applied (read and decided)
    uint64_t kept = 0;
    uint64_t bytes = 0;  // input bytes of those lines (a virtual '\n' not counted)
    double expected_false = 0.0;  // filter: sum over blocks of kept x mean expected FPR
    Status status = Status::done;
};

struct Input {
    int fd;  // -1: no more than the prefix
    std::vector<unsigned char> prefix;  // bytes already read from fd by the caller, read first
    // The most bytes read from fd (after the prefix): the exact path's later passes read what the
    // first one read, so that lines appended to a file during the run (a log being written) are
    // left out of every pass alike, not read by the later ones only.
    uint64_t limit = ~uint64_t(0);
};

// Every allocation of the pipeline's buffers calls fault::before_allocation() first (the test
// hook of tests/test_dedup_faults.py's allocation sweep; unarmed, one load and a branch).

// A growable byte buffer without the zero-fill of std::vector::resize (a read fills it).
struct Bytes {
    std::unique_ptr<unsigned char[]> p;
    size_t size = 0, cap = 0;
    void reserve(size_t n) {
        if (n <= cap) return;
        size_t c = std::max(n, cap + cap / 2);
        fault::before_allocation();
        std::unique_ptr<unsigned char[]> q(new unsigned char[c]);
        if (size) std::memcpy(q.get(), p.get(), size);
        p.swap(q);
        cap = c;
    }
    void append(const unsigned char* d, size_t n) {
        reserve(size + n);
        if (n) std::memcpy(p.get() + size, d, n);
        size += n;
    }
};

struct Block {
    uint64_t seq = 0;
    Bytes data;
    size_t used = 0;           // bytes of whole lines (a virtual '\n' included)
    bool virtual_nl = false;   // its last '\n' was added
    bool last_input = false;   // a block of the last input
    bool too_long = false;     // the line after this block's lines has a key longer than max_key
    bool end = false;          // no more input
    std::exception_ptr error;  // what reading it threw
    std::unique_ptr<uint64_t[]> line_end;  // one past each line's '\n' (line_count of them)
    size_t line_count = 0, line_cap = 0;
    std::vector<uint64_t> hashes;
    std::unique_ptr<bool[]> keep;
    size_t keep_cap = 0;
    // The lines apply() lets the output take: [write_from, write_to) of those applied (the exact
    // path's later passes write only lines no pass wrote and every pass has decided). Reset to
    // all of them with each block read.
    size_t write_from = 0, write_to = SIZE_MAX;
    // Hashing in batches of kHashBatch lines, which the producer that split the block and the
    // calling thread that takes it claim in turn (hash_unclaimed): when the producers are the
    // slower side, the calling thread hashes what they have not reached instead of waiting.
    // Measured (Zen 4, KVM guest, 2 threads, filter path, 5 interleaved runs, min / median s):
    // real text 0.50 / 0.55 -> 0.43 / 0.46, URL lines 0.36 / 0.44 -> 0.33 / 0.36, hex lines
    // (where the inserts are the slower side) unchanged.
    static constexpr size_t kHashBatch = 1024;
    size_t hash_batches = 0;
    std::atomic<size_t> hash_claimed{0};        // batches handed out (may pass hash_batches)
    std::atomic<bool> producer_hashing{false};  // the producer may still hash (or claim) a batch
    size_t lines() const noexcept { return line_count; }
    // How many of lines [from, to) are kept. Eight flags (bytes of 0 or 1) at a time, summed by
    // one multiply: GCC 12 left the plain loop one byte a step, and with two such loops a block
    // it was 4% of the calling thread's time with 2 threads (10^7 hex lines, perf, Zen 4).
    size_t kept_in(size_t from, size_t to) const noexcept {
        const bool* const k = keep.get();
        size_t n = 0, j = from;
        for (; j + 8 <= to; j += 8) {
            uint64_t w;
            std::memcpy(&w, k + j, 8);
            n += static_cast<size_t>((w * 0x0101010101010101ull) >> 56);
        }
        for (; j < to; ++j) n += k[j];
        return n;
    }
    // Line j's key: the line without its '\n' and one '\r' before it.
    KeySpan key(size_t j) const noexcept {
        const size_t start = j ? line_end[j - 1] : 0, end = line_end[j] - 1;
        const unsigned char* p = data.p.get();
        return KeySpan{p + start, end - start - (end > start && p[end - 1] == '\r')};
    }
};

// Calls line(end) with one past each '\n' of p[from, to), in order, until it returns false; returns
// where it stopped (to when it went through). The portable form: 8 bytes at a time with a bit
// trick (what ARM and s390x run; the tests call it on x86 too).
template <class Line>
size_t for_each_newline_portable(const unsigned char* p, size_t from, size_t to, Line&& line) {
    size_t i = from;
    constexpr uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    for (; i + 8 <= to; i += 8) {
        // Little-endian order on every CPU: the lowest set bit of the mask is then the first byte.
        const uint64_t w = load_le64(p + i) ^ (ones * '\n');
        uint64_t mask = (w - ones) & ~w & highs;  // the high bit of each zero byte (exact below the first)
        while (mask) {
            const unsigned byte = static_cast<unsigned>(__builtin_ctzll(mask)) / 8;
            if (p[i + byte] == '\n' && !line(i + byte + 1)) return i + byte + 1;
            mask &= mask - 1;
        }
    }
    for (; i < to; ++i)
        if (p[i] == '\n' && !line(i + 1)) return i + 1;
    return to;
}

// Room newline_ends needs past the newlines it finds: it writes a few entries beyond its count.
constexpr size_t kNewlineSlack = 8;

// Writes one past each '\n' of p[0, n) to ends[0..), in order, and returns how many there are;
// ends needs room for that many plus kNewlineSlack. On x86 it takes 64 bytes at a time (four
// SSE2 compares into one 64-bit mask) and writes the first four ends of a mask unconditionally:
// a window of 16-70-byte lines holds one to four, so there is no branch a line to mispredict
// (the 16-byte scan with a callback a newline that this replaces mispredicted about once a
// line).
inline size_t newline_ends(const unsigned char* p, size_t n, uint64_t* ends) noexcept {
    size_t count = 0, i = 0;
#if defined(__SSE2__)
    const __m128i nl = _mm_set1_epi8('\n');
    auto bits = [&](size_t at) {
        return static_cast<uint64_t>(static_cast<unsigned>(
            _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at)), nl))));
    };
    constexpr uint64_t top = uint64_t(1) << 63;  // (keeps ctz defined once the mask is empty)
    for (; i + 64 <= n; i += 64) {
        uint64_t mask = bits(i) | bits(i + 16) << 16 | bits(i + 32) << 32 | bits(i + 48) << 48;
        uint64_t* w = ends + count;
        const uint64_t base = i + 1;
        for (unsigned k = 0; k < 4; ++k) {  // an entry past the newlines is overwritten later
            w[k] = base + static_cast<uint64_t>(__builtin_ctzll(mask | top));
            count += mask != 0;
            mask &= mask - 1;
        }
        while (mask) {
            ends[count++] = base + static_cast<uint64_t>(__builtin_ctzll(mask));
            mask &= mask - 1;
        }
    }
#endif
    for_each_newline_portable(p, i, n, [&](size_t e) {
        ends[count++] = e;
        return true;
    });
    return count;
}

// Splits the block's lines (line_end) and sizes its per-line arrays; marks too_long (and cuts the
// block before it) at the first key longer than max_key. The keys are hashed after, by
// hash_unclaimed (possibly two threads at once, each claiming batches: Block::hash_claimed).
inline void split_lines(Block& b, uint64_t max_key) {
    b.line_count = 0;
    b.hash_batches = 0;
    const unsigned char* p = b.data.p.get();
    // Room for every line a block of this size can hold (a line is at least its '\n'): no check
    // per line. The entries are not initialized: only those of the lines are ever written (and
    // take memory), and the slack of 1/8 keeps a block a little larger than the last from
    // allocating again.
    if (b.line_cap < b.used + kNewlineSlack) {
        const size_t cap = b.used + b.used / 8 + kNewlineSlack;
        fault::before_allocation();
        b.line_end.reset(new uint64_t[cap]);
        b.line_cap = cap;
    }
    size_t n = newline_ends(p, b.used, b.line_end.get());
    if (max_key < b.used) {  // a key may pass max_key: the block ends before the first that does
        uint64_t start = 0;
        for (size_t j = 0; j < n; ++j) {
            const uint64_t e = b.line_end[j];
            uint64_t klen = e - 1 - start;
            if (klen && p[e - 2] == '\r') --klen;
            if (klen > max_key) {
                b.used = start;
                b.too_long = true;
                n = j;
                break;
            }
            start = e;
        }
    }
    b.line_count = n;
    if (n > b.hashes.capacity()) fault::before_allocation();
    b.hashes.resize(n);
    if (b.keep_cap < n) {
        fault::before_allocation();
        b.keep.reset(new bool[n]);
        b.keep_cap = n;
    }
    b.hash_batches = (n + Block::kHashBatch - 1) / Block::kHashBatch;
    b.hash_claimed.store(0, std::memory_order_relaxed);
}

// Hashes the keys of lines [first, first + count) of a split block into b.hashes.
inline void hash_lines(Block& b, const KeyHasher& hasher, size_t first, size_t count) noexcept {
    const unsigned char* p = b.data.p.get();
    const unsigned char* ptr[kBatchBlock];
    uint32_t len[kBatchBlock];
    for (size_t at = first, end = first + count; at < end; at += kBatchBlock) {
        const unsigned m = static_cast<unsigned>(std::min<size_t>(kBatchBlock, end - at));
        bool short_keys = true;
        for (unsigned j = 0; j < m; ++j) {
            const KeySpan k = b.key(at + j);
            ptr[j] = k.data;
            short_keys &= k.len <= UINT32_MAX;
            len[j] = static_cast<uint32_t>(k.len);
        }
        if (short_keys) {
            hash_bytes_block(hasher, ptr, len, m, p + b.data.size, b.hashes.data() + at);
        } else {
            for (unsigned j = 0; j < m; ++j) b.hashes[at + j] = hasher.hash_key(ptr[j], b.key(at + j).len);
        }
    }
}

// Hashes the batches of a split block that no thread claimed yet.
inline void hash_unclaimed(Block& b, const KeyHasher& hasher) noexcept {
    for (size_t t; (t = b.hash_claimed.fetch_add(1, std::memory_order_relaxed)) < b.hash_batches;) {
        const size_t first = t * Block::kHashBatch;
        hash_lines(b, hasher, first, std::min(Block::kHashBatch, b.lines() - first));
    }
}

// Splits the block's lines and hashes their keys (one thread).
inline void split_and_hash(Block& b, const KeyHasher& hasher, uint64_t max_key) {
    split_lines(b, max_key);
    hash_unclaimed(b, hasher);
}

// Index of the last '\n' in p[from, to), or SIZE_MAX. (memrchr is a GNU extension; the last line
// of a block is short, so a backward loop finds it in a few steps.)
inline size_t last_newline(const unsigned char* p, size_t from, size_t to) noexcept {
    for (size_t i = to; i > from; --i)
        if (p[i - 1] == '\n') return i - 1;
    return SIZE_MAX;
}

// Waits until fd is ready for `events`, calling wait() (which may throw Stopped) every tick.
template <class Wait>
void wait_ready(int fd, short events, std::chrono::milliseconds every, Wait&& wait) {
    while (true) {
        pollfd pfd{fd, events, 0};
        const int r = ::poll(&pfd, 1, static_cast<int>(every.count()));
        if (r > 0) return;
        if (r < 0 && errno != EINTR) return;  // let the read or write itself report the error
        wait();
    }
}

class Pipeline {
public:
    // tick(result_so_far): called by the calling thread at least every opt.tick_every; returns
    // true to stop (the run then throws Stopped after the block in hand).
    using Tick = std::function<bool(const Result&)>;

    Pipeline(std::vector<Input> inputs, int out_fd, int dropped_fd, const KeyHasher& hasher, const Options& opt,
             Tick tick)
        : inputs_(std::move(inputs)), out_fd_(out_fd), dropped_fd_(dropped_fd), hasher_(hasher), opt_(opt),
          tick_(std::move(tick)), read_from_fd_(inputs_.size(), 0) {
        if (opt_.block == 0) opt_.block = 1;
        if (opt_.threads == 0) opt_.threads = 1;
    }
    // Bytes read so far from each input's fd (its prefix not counted).
    const std::vector<uint64_t>& bytes_read_from_fds() const noexcept { return read_from_fd_; }

    // Runs to the end of the input (or a stop): for each block in order, apply(block) fills
    // block.keep[0, k) and returns k (k < lines: the key k found no room, stop after it);
    // write_block(block, k) then writes the kept lines; commit() runs after they were written.
    // `write_behind` (only for a commit that does nothing: a filter, an anonymous store): with
    // threads > 1, a writer thread gathers and writes the applied blocks in order, so that the
    // calling thread only applies (the writes' copies then overlap the next block's inserts).
    // `warm()` runs on the calling thread once the producers started (before the first block):
    // work that apply() would otherwise do in its first blocks while the producers wait, such as
    // faulting in the pages of a table.
    template <class Apply, class Commit, class Warm = void (*)()>
    Result run(Apply&& apply, Commit&& commit, bool write_behind = false, Warm&& warm = [] {}) {
        const unsigned producers = opt_.threads > 1 ? opt_.threads - 1 : 0;
        struct Joiner {
            Pipeline& p;
            ~Joiner() { p.stop_producers(); }
        } joiner{*this};
        if (producers) start_threads(producers, write_behind);
        warm();
        Result r;
        last_tick_ = std::chrono::steady_clock::now();
        for (uint64_t seq = 0;; ++seq) {
            std::unique_ptr<Block> b = producers ? next_ready(seq, r) : produce_inline(r);
            if (b->error) std::rethrow_exception(b->error);
            if (b->end) break;
            const size_t n = b->lines();
            const size_t k = apply(*b, n);
            r.lines += k;
            if (b->write_from < k) r.kept += b->kept_in(b->write_from, std::min(b->write_to, k));
            r.bytes += k == n ? b->used - (b->virtual_nl ? 1 : 0) : (k ? b->line_end[k - 1] : 0);
            const bool stop_after = k < n || b->too_long;
            if (k < n)
                r.status = Status::full;
            else if (b->too_long)
                r.status = Status::key_too_long;
            if (has_writer_) {
                hand_to_writer(std::move(b), k, r);
            } else {
                write_block(*b, k, [&](bool now) {
                    if (now) last_tick_ = {};  // after EINTR: a signal arrived, check it now
                    maybe_tick(r);
                });
                commit();
                recycle(std::move(b));
            }
            if (stop_after) break;
            maybe_tick(r);
        }
        if (has_writer_) finish_writer(r);
        return r;
    }

    // The bytes each block read from now on aims at (a block being read may keep the old size).
    void set_block_size(size_t bytes) noexcept { block_target_.store(std::max<size_t>(bytes, 1)); }

    // warm(hashes, n): called by the producer thread (threads = 2 only) with the hashes of the
    // block the calling thread takes next, while the calling thread still applies the one before
    // it; it may only prefetch (read nothing that the calling thread writes). Set before run().
    using BlockWarmer = std::function<void(const uint64_t* hashes, size_t n)>;
    void set_next_block_warmer(BlockWarmer warm) { warm_next_block_ = std::move(warm); }

    // Calls tick() now if opt.tick_every passed since the last call; throws Stopped if asked.
    void maybe_tick(const Result& r) {
        const auto now = std::chrono::steady_clock::now();
        if (now - last_tick_ < opt_.tick_every) return;
        last_tick_ = now;
        if (tick_ && tick_(r)) throw Stopped{};
    }

private:
    // ---- reading (under read_mutex_ when producers run) ----
    // Fills b with the next whole lines of the input; b.end when there are none. Returns false
    // when it gave way instead (give_way() said so after the input ran dry for the moment: b
    // holds nothing, the bytes read so far wait in carry_ for the next read).
    //
    // A block is read to its size, except from an input that runs dry (a pipe, a terminal, a
    // socket): there, once a tick (opt.tick_every) passed since the block's read began, the
    // whole lines read so far make the block. So the lines of a live stream (`tail -f log |
    // cuckoo dedup`) come out within about a tick, not a block later, while a pipe that keeps
    // up (zcat) still fills whole blocks. (The output does not depend on where blocks end.)
    template <class Wait, class GiveWay>
    bool read_block(Block& b, Wait&& wait, GiveWay&& give_way) {
        b.used = 0;
        b.virtual_nl = b.too_long = b.end = false;
        b.error = nullptr;
        b.write_from = 0;
        b.write_to = SIZE_MAX;
        Bytes& d = b.data;
        d.size = 0;
        const auto began = std::chrono::steady_clock::now();
        while (true) {
            if (src_ >= inputs_.size()) {
                b.end = true;
                return true;
            }
            if (!prefix_taken_) {
                carry_.append(inputs_[src_].prefix.data(), inputs_[src_].prefix.size());
                prefix_taken_ = true;
            }
            d.append(carry_.p.get(), carry_.size);
            carry_.size = 0;
            const size_t sized = block_target_.load(std::memory_order_relaxed);
            size_t target = std::max(sized ? sized : opt_.block, d.size + 1);
            bool eof = false;
            size_t searched = 0;  // bytes of d known to hold no '\n'
            // The whole lines of d make the block; the rest waits in carry_.
            const auto take_lines_to = [&](size_t last) {
                const size_t used = last + 1;
                carry_.append(d.p.get() + used, d.size - used);
                d.size = used;
                b.used = used;
                b.last_input = src_ + 1 == inputs_.size();
            };
            while (true) {
                d.reserve(target + 1);  // + 1: room for a virtual '\n'
                while (d.size < target) {
                    const size_t asked = target - d.size;
                    const uint64_t left = inputs_[src_].limit - read_from_fd_[src_];
                    const ssize_t got = left == 0 ? 0 : read_some(inputs_[src_].fd, d.p.get() + d.size,
                                                                  static_cast<size_t>(std::min<uint64_t>(asked, left)), wait);
                    if (got > 0) read_from_fd_[src_] += static_cast<uint64_t>(got);
                    if (got == 0) {
                        eof = true;
                        break;
                    }
                    if (got > 0) d.size += static_cast<size_t>(got);
                    if (got != kIdle && static_cast<size_t>(got) == asked) continue;
                    // The input ran dry for now.
                    if (std::chrono::steady_clock::now() - began >= opt_.tick_every) {
                        const size_t last = last_newline(d.p.get(), searched, d.size);
                        if (last != SIZE_MAX) {
                            take_lines_to(last);
                            return true;
                        }
                        searched = d.size;
                    }
                    if (give_way()) {
                        carry_.append(d.p.get(), d.size);  // (carry_ was emptied into d above)
                        d.size = 0;
                        return false;
                    }
                }
                if (eof) break;
                const size_t last = last_newline(d.p.get(), searched, d.size);
                if (last != SIZE_MAX) {
                    take_lines_to(last);
                    return true;
                }
                // A line longer than the block: read on until its end (refused early when its
                // key already passes max_key: +1 for a '\r' that would not be part of it).
                searched = d.size;
                if (d.size > opt_.max_key + 1 && opt_.max_key != ~uint64_t(0)) {
                    b.too_long = true;
                    b.used = 0;
                    return true;
                }
                target = d.size + opt_.block;
            }
            // End of this input: its last line may lack its '\n'.
            b.last_input = src_ + 1 == inputs_.size();
            ++src_;
            prefix_taken_ = false;
            if (d.size == 0) continue;
            if (d.p[d.size - 1] != '\n') {
                d.p[d.size++] = '\n';  // reserved above
                b.virtual_nl = true;
            }
            b.used = d.size;
            return true;
        }
    }

    // read_some's answer when the fd had nothing to read for a tick (after wait()).
    static constexpr ssize_t kIdle = -1;
    // Reads up to n bytes into dst: how many, 0 at the end of the input, or kIdle.
    template <class Wait>
    ssize_t read_some(int fd, unsigned char* dst, size_t n, Wait&& wait) {
        if (fd < 0) return 0;  // an input given whole as its prefix
        while (true) {
            pollfd pfd{fd, POLLIN, 0};
            const int ready = ::poll(&pfd, 1, static_cast<int>(opt_.tick_every.count()));
            if (ready == 0) {
                wait();
                return kIdle;
            }
            if (ready < 0 && errno == EINTR) {
                wait();
                continue;
            }
            // (ready < 0 otherwise: let the read itself report the error)
            const ssize_t got = ::read(fd, dst, std::min<size_t>(n, size_t(1) << 30));
            if (got >= 0) return got;
            if (errno == EINTR) {
                wait();
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) continue;  // a non-blocking fd: poll again
            throw IoError(errno, 0, src_, "cannot read input");
        }
    }

    std::unique_ptr<Block> take_free() {
        std::lock_guard<std::mutex> g(queue_mutex_);
        if (free_.empty()) {
            fault::before_allocation();
            return std::unique_ptr<Block>(new Block());
        }
        std::unique_ptr<Block> b = std::move(free_.back());
        free_.pop_back();
        return b;
    }
    void recycle(std::unique_ptr<Block> b) {
        {
            std::lock_guard<std::mutex> g(queue_mutex_);
            free_.push_back(std::move(b));
        }
        room_.notify_one();
    }

    std::unique_ptr<Block> produce_inline(const Result& r) {
        std::unique_ptr<Block> b = take_free();
        read_block(*b, [&] { maybe_tick(r); }, [] { return false; });
        if (!b->end) split_and_hash(*b, hasher_, opt_.max_key);
        return b;
    }

    // The first block split sizes the blocks read after it (Options::lines_per_block): blocks of
    // many short lines hold large per-line arrays (16 bytes a line: its end and its hash) that
    // the calling thread reads after the producer wrote them, and with the blocks in flight they
    // crowd the table out of the shared cache. Measured (Zen 4, 2 threads, 5 alternating runs,
    // median): 10^7 hex lines of 21 bytes in 1 MiB blocks 0.32 s, in 336 KiB blocks (16 Ki
    // lines) 0.29 s; real text of 31-byte lines 0.68 s and 0.65 s (514 KiB); URL lines of 56
    // bytes were slower in 256 KiB blocks than in 1 MiB ones (0.53 against 0.47 s: a block's
    // hand-overs cost tens of microseconds on this KVM guest).
    void size_blocks_from(const Block& b) noexcept {
        if (!opt_.lines_per_block || !b.lines() || block_target_.load(std::memory_order_relaxed)) return;
        const double mean = static_cast<double>(b.used) / static_cast<double>(b.lines());
        const size_t floor = std::min(kMinAdaptiveBlock, opt_.block);
        const double want = mean * static_cast<double>(opt_.lines_per_block);
        size_t target = want >= static_cast<double>(opt_.block) ? opt_.block : static_cast<size_t>(want);
        target = std::max(floor, (target + 4095) / 4096 * 4096);
        block_target_.store(std::min(target, opt_.block), std::memory_order_relaxed);
    }

    // ---- producer threads (and the writer) ----
    void start_threads(unsigned n, bool writer) {
        in_flight_limit_ = 2 * n + 2;
        warms_ = warm_next_block_ && n == 1;
        // The producers block every signal (they inherit the mask at creation): a signal then
        // reaches the calling thread, whose waits and writes it interrupts, and which alone runs
        // the caller's tick().
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        try {
            if (writer && n == 1) {
                // One producer and the writer: one thread for both (see produce_and_write).
                has_writer_ = writes_with_reads_ = true;
                threads_.emplace_back([this] { produce_and_write(); });
            } else {
                for (unsigned t = 0; t < n; ++t) threads_.emplace_back([this] { produce(); });
                if (writer) {
                    threads_.emplace_back([this] { write_behind(); });
                    has_writer_ = true;
                }
            }
        } catch (...) {
            pthread_sigmask(SIG_SETMASK, &old, nullptr);
            stop_producers();
            throw;
        }
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
    }
    void stop_producers() {
        stop_.store(true);
        {
            std::lock_guard<std::mutex> g(queue_mutex_);  // (a producer checks stop_ under it, then waits)
        }
        room_.notify_all();
        {
            std::lock_guard<std::mutex> g(write_mutex_);  // (the writer waits under it)
        }
        write_cv_.notify_all();
        for (std::thread& t : threads_) t.join();
        threads_.clear();
    }

    void produce() {
        try {
            produce_blocks();
        } catch (...) {  // (no memory for a block): the calling thread rethrows it
            std::lock_guard<std::mutex> g(queue_mutex_);
            if (!fatal_) fatal_ = std::current_exception();
        }
        ready_cv_.notify_all();
    }
    void produce_blocks() {
        while (true) {
            const Step step = produce_one(false);
            if (step == Step::warm_first)
                warm_next();
            else if (step != Step::produced)
                return;
        }
    }
    // The block the calling thread takes next, when the warmer should prefetch for it now (under
    // queue_mutex_): it is ready (split and hashed: by this thread, the only producer, which
    // hashed all of it before it returned, since the calling thread claims batches only of the
    // blocks it took) and not warmed yet. Warming runs with one producer only: that thread alone
    // refills a block (take_free), so the block it warms cannot be overwritten meanwhile.
    Block* block_to_warm() {
        if (!warms_ || consumed_ < warmed_up_to_) return nullptr;
        const auto it = ready_.find(consumed_);
        if (it == ready_.end() || it->second->end || it->second->error) return nullptr;
        return it->second.get();
    }
    // Warms the block the calling thread takes next (block_to_warm), if any. The calling thread
    // may take it meanwhile: it then only reads its hashes too.
    void warm_next() {
        Block* b;
        {
            std::lock_guard<std::mutex> g(queue_mutex_);
            b = block_to_warm();
            if (!b) return;
            warmed_up_to_ = b->seq + 1;
        }
        warm_next_block_(b->hashes.data(), b->lines());
    }
    // What produce_one did: read a block (the last one, when it ended the input or failed), or
    // nothing (stopped; or, for a producer that also writes, a block is waiting to be written
    // and there is no room for another one in flight).
    enum class Step { produced, last, stopped, write_first, warm_first };
    Step produce_one(bool also_writes) {
        // A producer that also writes stops reading when the calling thread has taken its last
        // block (finish_writer): a read waiting on a pipe that stays open would otherwise keep
        // the last writes from being done.
        const auto over = [this, also_writes] { return stop_.load() || (also_writes && reading_over_.load()); };
        const auto wait = [&over] {
            if (over()) throw Stopped{};
        };
        {
            // Bound the blocks in flight (read, not yet taken by the calling thread).
            std::unique_lock<std::mutex> g(queue_mutex_);
            room_.wait(g, [&] {
                return over() || issued_ - consumed_ < in_flight_limit_ || (also_writes && writes_queued_.load() > 0) ||
                       block_to_warm() != nullptr;
            });
            if (over()) return Step::stopped;
            if (block_to_warm()) return Step::warm_first;  // (see set_next_block_warmer)
            if (issued_ - consumed_ >= in_flight_limit_) return Step::write_first;
            ++issued_;
        }
        {
            std::unique_ptr<Block> b = take_free();
            // A producer that also writes gives way to the blocks queued for it when the input
            // runs dry: else, with its read waiting on a pipe that stays open, the calling thread
            // could wait for room in a full write queue and never reach finish_writer.
            const auto give_way = [this, also_writes] { return also_writes && writes_queued_.load() > 0; };
            bool gave_way = false;
            bool last = true;  // the input ended (with this block or before it) or failed
            try {
                std::lock_guard<std::mutex> rg(read_mutex_);
                b->seq = next_seq_++;
                if (input_done_) {
                    b->end = true;
                    b->error = nullptr;
                } else if (!read_block(*b, wait, give_way)) {
                    --next_seq_;
                    gave_way = true;
                } else if (b->end || b->too_long) {
                    input_done_ = true;
                }
                last = input_done_;  // (read under the lock: other producers set it)
            } catch (const Stopped&) {
                return Step::stopped;
            } catch (...) {
                std::lock_guard<std::mutex> rg(read_mutex_);
                b->error = std::current_exception();
                input_done_ = true;
            }
            if (gave_way) {
                recycle(std::move(b));
                std::lock_guard<std::mutex> g(queue_mutex_);
                --issued_;
                return Step::write_first;
            }
            bool split = false;
            if (!b->end && !b->error) {
                try {
                    split_lines(*b, opt_.max_key);
                    size_blocks_from(*b);
                    split = true;
                } catch (...) {
                    b->error = std::current_exception();
                }
            }
            // The block goes to the calling thread split, and is hashed by both: the calling
            // thread takes the batches this thread has not reached when it gets there first
            // (next_ready), and waits for producer_hashing to fall before it uses the block.
            Block* const block = b.get();
            block->producer_hashing.store(split, std::memory_order_relaxed);
            {
                std::lock_guard<std::mutex> g(queue_mutex_);
                ready_[b->seq] = std::move(b);
            }
            ready_cv_.notify_all();
            if (split) {
                hash_unclaimed(*block, hasher_);
                block->producer_hashing.store(false, std::memory_order_release);  // (then untouched)
            }
            return last ? Step::last : Step::produced;  // (the other producers hand over the end)
        }
    }

    // The producer and the writer as one thread (threads = 2 with a writer): it writes the
    // applied blocks first, as they come, and reads the next block when none waits. With a
    // thread each, three threads shared the two cores, and the calling thread, whose inserts
    // are the critical path, ran about two thirds of the time; with this one it has a core of
    // its own. Errors as from both: a read's goes with its block, a write's to write_error_ and,
    // since no block will follow it, to fatal_ as well, which the calling thread rethrows
    // wherever it waits.
    void produce_and_write() {
        bool reading = true;
        try {
            while (true) {
                Written w;
                bool have = false;
                {
                    std::lock_guard<std::mutex> g(write_mutex_);
                    if (!to_write_.empty()) {
                        w = std::move(to_write_.front());
                        to_write_.pop_front();
                        writes_queued_.fetch_sub(1);
                        have = true;
                    }
                }
                if (have) {
                    if (!w.block) break;  // the end: all written
                    write_block(*w.block, w.k, [this](bool) {
                        if (stop_.load()) throw Stopped{};
                    }, /*writer=*/true);
                    recycle(std::move(w.block));
                    write_cv_.notify_all();  // room in the queue
                    continue;
                }
                if (reading) {
                    const Step step = produce_one(true);
                    if (step == Step::warm_first) {
                        warm_next();
                        continue;
                    }
                    if (step == Step::stopped && stop_.load()) return;
                    if (step == Step::last || step == Step::stopped) reading = false;  // (stopped: reading_over_)
                    continue;
                }
                std::unique_lock<std::mutex> g(queue_mutex_);  // (hand_to_writer notifies room_)
                room_.wait(g, [&] { return stop_.load() || writes_queued_.load() > 0; });
                if (stop_.load()) return;
            }
        } catch (const Stopped&) {
            return;
        } catch (...) {
            const std::exception_ptr e = std::current_exception();
            {
                std::lock_guard<std::mutex> g(write_mutex_);
                write_error_ = e;
            }
            std::lock_guard<std::mutex> g(queue_mutex_);
            if (!fatal_) fatal_ = e;
        }
        ready_cv_.notify_all();
        {
            std::lock_guard<std::mutex> g(write_mutex_);
            writer_done_ = true;
        }
        write_cv_.notify_all();
    }
    std::unique_ptr<Block> next_ready(uint64_t seq, const Result& r) {
        std::unique_lock<std::mutex> g(queue_mutex_);
        while (true) {
            if (fatal_) std::rethrow_exception(fatal_);
            auto it = ready_.find(seq);
            if (it != ready_.end()) {
                std::unique_ptr<Block> b = std::move(it->second);
                ready_.erase(it);
                ++consumed_;  // counts against in_flight_limit_ from here: the block is ours
                g.unlock();
                room_.notify_all();
                if (!b->end && !b->error) {
                    hash_unclaimed(*b, hasher_);
                    // The batches the producer claimed: it is hashing them now, so this waits
                    // for no more than one batch (kHashBatch keys).
                    while (b->producer_hashing.load(std::memory_order_acquire)) std::this_thread::yield();
                    prefetch_hashes(*b);
                }
                return b;
            }
            ready_cv_.wait_for(g, opt_.tick_every);
            g.unlock();
            maybe_tick(r);
            g.lock();
        }
    }

    // Asks for the block's hashes, which the producer wrote on the other core, all at once: the
    // apply's batches read them 32 at a time (a 256-byte copy), each copy waiting for lines held
    // modified in the other core's cache, one after the other. Requested together, the
    // transfers overlap (16 Ki lines: 128 KiB, within the calling core's L2).
    static void prefetch_hashes(const Block& b) noexcept {
        const char* p = reinterpret_cast<const char*>(b.hashes.data());
        const size_t bytes = b.lines() * sizeof(uint64_t);
        for (size_t at = 0; at < bytes; at += 64) __builtin_prefetch(p + at, 0, 3);
    }

    // ---- writing ----
    // wait(now) runs while a write waits for the fd, and with now = true after EINTR (the calling
    // thread: maybe_tick; the writer, which blocks every signal: a check of stop_).
    // `writer`: called from the writer thread, which blocks every signal, so that no EINTR
    // would ever end a write() that blocks on a pipe nobody reads: it writes such fds (all but
    // regular files) PIPE_BUF bytes at a time after poll() said POLLOUT, which a pipe takes
    // without blocking, and so sees stop_ within a tick.
    template <class Wait>
    void write_block(Block& b, size_t k, Wait&& wait, bool writer = false) {
        k = std::min(k, b.write_to);
        const bool final = b.last_input && b.virtual_nl && k == b.lines();
        if (out_fd_ >= 0) gather_and_write(b, k, true, final, out_fd_, 1, wait, writer ? chunk_of(out_fd_) : 0);
        if (dropped_fd_ >= 0)
            gather_and_write(b, k, false, final, dropped_fd_, 2, wait, writer ? chunk_of(dropped_fd_) : 0);
    }
    static size_t chunk_of(int fd) {
        struct stat st;
        if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) return 0;  // 0: no limit
        return PIPE_BUF;
    }

    // The writer thread (write_behind): takes applied blocks in order and writes them. A failed
    // write ends it: the calling thread rethrows the error at its next block (or at the end),
    // having applied at most the blocks in the queue beyond it.
    void write_behind() {
        const auto wait = [this](bool) {
            if (stop_.load()) throw Stopped{};
        };
        try {
            while (true) {
                Written w;
                {
                    std::unique_lock<std::mutex> g(write_mutex_);
                    write_cv_.wait(g, [&] { return stop_.load() || !to_write_.empty(); });
                    if (to_write_.empty()) return;  // stopped
                    w = std::move(to_write_.front());
                    to_write_.pop_front();
                    writes_queued_.fetch_sub(1);
                }
                if (!w.block) break;  // the end: all written
                write_block(*w.block, w.k, wait, /*writer=*/true);
                recycle(std::move(w.block));
                write_cv_.notify_all();  // room in the queue
            }
        } catch (const Stopped&) {
            return;
        } catch (...) {
            std::lock_guard<std::mutex> g(write_mutex_);
            write_error_ = std::current_exception();
        }
        {
            std::lock_guard<std::mutex> g(write_mutex_);
            writer_done_ = true;
        }
        write_cv_.notify_all();
    }
    // Queues block b (k lines applied) for the writer, waiting (with ticks) while it has
    // kWriteQueue blocks to write; rethrows the writer's error.
    void hand_to_writer(std::unique_ptr<Block> b, size_t k, const Result& r) {
        std::unique_lock<std::mutex> g(write_mutex_);
        while (true) {
            if (write_error_) std::rethrow_exception(write_error_);
            if (to_write_.size() < kWriteQueue) break;
            write_cv_.wait_for(g, opt_.tick_every);
            g.unlock();
            maybe_tick(r);
            g.lock();
        }
        to_write_.push_back(Written{std::move(b), k});
        writes_queued_.fetch_add(1);  // (with the queue: the writer pops under this mutex too)
        g.unlock();
        notify_writer();
    }
    // Wakes the writer after writes_queued_ went up.
    void notify_writer() {
        if (writes_with_reads_) {
            // It may wait for room under queue_mutex_: taking the mutex after the count went up
            // means it either saw the count or is waiting and gets the notification.
            { std::lock_guard<std::mutex> q(queue_mutex_); }
            room_.notify_all();
        } else {
            write_cv_.notify_all();
        }
    }
    // After the last block: waits (with ticks) until the writer wrote everything; rethrows its
    // error.
    void finish_writer(const Result& r) {
        reading_over_.store(true);  // (before the end is queued: the writer sees it when it wakes)
        std::unique_lock<std::mutex> g(write_mutex_);
        to_write_.push_back(Written{nullptr, 0});
        writes_queued_.fetch_add(1);
        g.unlock();
        notify_writer();
        g.lock();
        while (!writer_done_) {
            write_cv_.wait_for(g, opt_.tick_every);
            g.unlock();
            maybe_tick(r);
            g.lock();
        }
        if (write_error_) std::rethrow_exception(write_error_);
    }

    // Writes lines [b.write_from, k) whose keep flag equals `kept`, in order, with one copy into
    // out_ and as few write() calls as the fd takes. `final`: the block ends the input with a
    // virtual '\n', which is not written.
    //
    // Two ways to gather, chosen by how often the flag flips from one line to the next. Where it
    // flips often (hex lines, whose repeats are a coin toss: a branch on the flag mispredicted
    // about every other line), every line is copied to the output's end and the end moves on by
    // its length when the line is selected: one 32-byte copy for lines up to 32 bytes (it may
    // read past the line, within the block's buffer, and write past it, within out_'s slack),
    // memcpy beyond. Where it flips rarely (real text, whose repeats come in runs: the copies of
    // files seen before), runs of selected lines are copied whole, which the branchless copy made
    // slower there (perf, one thread: the calling thread's loop 4.4-5.4% -> 7.5-8.6% of the
    // samples; on hex lines 8.6% -> 5.9%).
    template <class Wait>
    void gather_and_write(const Block& b, size_t k, bool kept, bool final, int fd, int side, Wait&& wait,
                          size_t chunk) {
        constexpr size_t kGather = 32;
        const size_t from = b.write_from;
        const unsigned char* p = b.data.p.get();
        const size_t first = from ? b.line_end[from - 1] : 0, last = k > from ? b.line_end[k - 1] : first;
        out_.size = 0;
        out_.reserve(last - first + kGather);
        size_t flips = 0;
        for (size_t j = from + 1; j < k; ++j) flips += b.keep[j] != b.keep[j - 1];
        bool last_sel = false;  // (line k - 1 selected)
        if (flips * 4 > k - from) {
            unsigned char* const dst = out_.p.get();
            const size_t readable = b.data.cap;  // (a fixed-size copy reads no further)
            size_t at = 0, start = first;
            for (size_t j = from; j < k; ++j) {
                const size_t end = b.line_end[j], len = end - start;
                const bool sel = b.keep[j] == kept;
                if (len <= kGather && start + kGather <= readable)
                    std::memcpy(dst + at, p + start, kGather);
                else
                    std::memcpy(dst + at, p + start, len);
                at += sel ? len : 0;
                last_sel = sel;
                start = end;
            }
            out_.size = at;
        } else {
            size_t run_start = 0;
            bool in_run = false;
            for (size_t j = from; j < k; ++j) {
                const bool sel = b.keep[j] == kept;
                const size_t start = j ? b.line_end[j - 1] : 0;
                if (sel && !in_run) {
                    run_start = start;
                    in_run = true;
                } else if (!sel && in_run) {
                    out_.append(p + run_start, start - run_start);
                    in_run = false;
                }
            }
            if (in_run) out_.append(p + run_start, last - run_start);
            last_sel = in_run;
        }
        if (final && k > from && last_sel && out_.size) --out_.size;
        write_all(fd, out_.p.get(), out_.size, side, wait, chunk);
    }
    // `chunk` (0: none): the most bytes one write() takes.
    template <class Wait>
    void write_all(int fd, const unsigned char* data, size_t n, int side, Wait&& wait, size_t chunk) {
        while (n) {
            wait_ready(fd, POLLOUT, opt_.tick_every, [&] { wait(false); });
            const ssize_t w = ::write(fd, data, std::min<size_t>(n, chunk ? chunk : size_t(1) << 30));
            if (w < 0) {
                if (errno == EINTR) {
                    wait(true);
                    continue;
                }
                if (errno == EAGAIN || errno == EWOULDBLOCK) continue;
                throw IoError(errno, side, 0, "cannot write output");
            }
            data += w;
            n -= static_cast<size_t>(w);
        }
    }
    std::vector<Input> inputs_;
    int out_fd_, dropped_fd_;
    KeyHasher hasher_;
    Options opt_;
    Tick tick_;
    std::chrono::steady_clock::time_point last_tick_;
    Bytes out_;
    std::vector<uint64_t> read_from_fd_;  // bytes read from each input's fd (read_mutex_)

    // Reading state (read_mutex_ when producers run).
    std::mutex read_mutex_;
    size_t src_ = 0;
    bool prefix_taken_ = false;
    Bytes carry_;
    bool input_done_ = false;
    uint64_t next_seq_ = 0;

    // Hand-over between producers and the calling thread (queue_mutex_).
    std::mutex queue_mutex_;
    std::condition_variable ready_cv_, room_;
    std::map<uint64_t, std::unique_ptr<Block>> ready_;
    std::vector<std::unique_ptr<Block>> free_;
    uint64_t issued_ = 0, consumed_ = 0, in_flight_limit_ = 4;
    BlockWarmer warm_next_block_;  // (set_next_block_warmer)
    bool warms_ = false;           // a warmer and one producer (set before the threads start)
    uint64_t warmed_up_to_ = 0;    // blocks before this seq were warmed (or taken first)
    std::atomic<size_t> block_target_{0};  // bytes a read aims at (0: opt_.block), size_blocks_from
    std::atomic<bool> stop_{false};
    std::exception_ptr fatal_;
    std::vector<std::thread> threads_;

    // Hand-over to the writer thread (write_mutex_). Two blocks queued are enough for the writer
    // to keep up (its copies are faster than the inserts) and bound the memory held.
    static constexpr size_t kWriteQueue = 2;
    struct Written {
        std::unique_ptr<Block> block;  // null: the end
        size_t k = 0;
    };
    std::mutex write_mutex_;
    std::condition_variable write_cv_;
    std::deque<Written> to_write_;
    bool has_writer_ = false, writer_done_ = false;
    bool writes_with_reads_ = false;  // the writer is the producer thread (produce_and_write)
    std::atomic<size_t> writes_queued_{0};  // blocks (and the end) in to_write_
    std::atomic<bool> reading_over_{false};  // the calling thread took its last block
    std::exception_ptr write_error_;
};

// ---- the two tables ----

// Bytes the inputs hold from here on when each is a regular file (or a prefix alone), else 0
// (a pipe: unknown).
inline uint64_t known_input_bytes(const std::vector<Input>& inputs) noexcept {
    uint64_t total = 0;
    for (const Input& in : inputs) {
        total += in.prefix.size();
        if (in.fd < 0) continue;
        struct stat st;
        if (::fstat(in.fd, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
        const off_t at = ::lseek(in.fd, 0, SEEK_CUR);
        if (at >= 0 && st.st_size > at) total += static_cast<uint64_t>(st.st_size - at);
    }
    return total;
}

// Lines a block of the filter path with producers (Options::lines_per_block).
constexpr size_t kFilterLinesPerBlock = 16384;

// Prefetches the buckets that a block's unique inserts will read, for the producer thread
// (Pipeline::set_next_block_warmer), while the calling thread still applies the block before.
// The inserts are the critical path with two threads, and they wait on their buckets: the table
// is larger than a core's L2, and with other guests on the host it does not stay in L3 either.
// The producer's prefetches bring the lines to the shared L3 (or its own L2) ahead of them. It
// only prefetches (a hint, not a read): the filter's layout (where its stages' buckets are) is
// copied here by the calling thread, under the mutex, when a stage was added.
// Measured (AMD EPYC Zen 4, KVM guest, 2026-11-29; `cuckoo dedup --threads 2`, 6 interleaved
// rounds, median / min s, without -> with): 10^7 hex lines 0.39 / 0.33 -> 0.34 / 0.30, URL lines
// 0.64 / 0.60 -> 0.43 / 0.33, real text 0.59 / 0.54 -> 0.50 / 0.47 (one thread: 0.56, 0.74,
// 0.91 median); perf: the inserts 50% -> 38% of the samples (hex), the warming 13%, on the
// producer. Warming the next two or three blocks instead of one was no faster.
class BucketWarmer {
public:
    explicit BucketWarmer(const StagedFilter& f) { refresh(f); }
    // Calling thread: after an apply that may have added a stage.
    void refresh(const StagedFilter& f) {
        if (f.stage_count() == stage_count_) return;
        std::lock_guard<std::mutex> g(mutex_);
        layouts_ = 0;
        for (size_t k = f.stage_count(); k-- > 0 && layouts_ < kStages;) {
            const Filter& stage = f.stage(k);
            layout_[layouts_++] = Layout{stage.locator(), stage.table().probe()};
        }
        stage_count_ = f.stage_count();
    }
    // Producer thread.
    void warm(const uint64_t* hashes, size_t n) const {
        std::array<Layout, kStages> layout;
        size_t layouts;
        {
            std::lock_guard<std::mutex> g(mutex_);
            layout = layout_;
            layouts = layouts_;
        }
        for (size_t j = 0; j < n; ++j) {
            for (size_t s = 0; s < layouts; ++s) {
                const KeyHash k = layout[s].loc.locate(hashes[j]);
                layout[s].probe.prefetch(k.i1);
                layout[s].probe.prefetch(k.i2);
            }
        }
    }

private:
    struct Layout {
        Locator loc;
        TableProbe probe;
    };
    static constexpr size_t kStages = 4;  // the newest ones (a filter sized from its estimate has one)
    mutable std::mutex mutex_;
    std::array<Layout, kStages> layout_{};
    size_t layouts_ = 0;
    size_t stage_count_ = 0;  // (calling thread only)
};

// Dedup through a filter: each block's keys go through insert_batch (unique) in line order; a key
// that finds no room ends the run after the lines before it (Status::full; the filter holds
// exactly their keys).
inline Result with_filter(StagedFilter& f, std::vector<Input> inputs, int out_fd, int dropped_fd, const Options& opt,
                          Pipeline::Tick tick) {
    // With producers, the table's pages are faulted in while they read the first blocks (the
    // calling thread, whose inserts are the critical path, would take those faults in its first
    // blocks while the producers wait for room): when the input is known to be at least as large
    // as the table, its inserts would touch every page anyway.
    const bool warm = opt.threads > 1 && known_input_bytes(inputs) >= f.newest().table().allocated_bytes();
    Options sized = opt;
    if (opt.threads > 1 && !sized.lines_per_block) sized.lines_per_block = kFilterLinesPerBlock;
    Pipeline p(std::move(inputs), out_fd, dropped_fd, f.hasher(), sized, std::move(tick));
    BucketWarmer warmer(f);
    p.set_next_block_warmer([&warmer](const uint64_t* hashes, size_t n) { warmer.warm(hashes, n); });
    double fpr_before = f.expected_fpr();
    double expected_false = 0.0;
    Result r = p.run(
        [&](Block& b, size_t n) -> size_t {
            bool full = false;
            const uint64_t* h = b.hashes.data();
            const size_t done = static_cast<size_t>(
                f.insert_batch(n, [h](uint64_t k) { return h[k]; }, Filter::InsertMode::Unique, b.keep.get(), full,
                               [] { return false; }));
            warmer.refresh(f);
            const size_t kept = b.kept_in(0, done);
            const double fpr_after = f.expected_fpr();
            expected_false += static_cast<double>(kept) * 0.5 * (fpr_before + fpr_after);
            fpr_before = fpr_after;
            return done;
        },
        [] {}, /*write_behind=*/true, [&] {
            if (warm && f.writable()) f.prefault();
        });
    r.expected_false = expected_false;
    return r;
}

// Adds the block's first n keys to the store (each one new or not: b.keep), in line order;
// `keys`: the caller's buffer for their spans (kept between blocks).
inline void add_block_to_store(Store& s, Block& b, size_t n, std::vector<KeySpan>& keys) {
    if (keys.capacity() < n) fault::before_allocation();
    keys.resize(n);
    for (size_t j = 0; j < n; ++j) keys[j] = b.key(j);
    uint64_t done = 0;
    s.apply_chunk(Store::Op::AddUnique, n, keys.data(), b.hashes.data(), nullptr, b.keep.get(), done);
}

// Exact dedup through a store. `batches` (a persistent store): each block is one store batch,
// committed only after the block's lines were written (handed to the OS): whatever stops the run
// leaves in the store no line that was not written. Without it (an anonymous store), each block is
// one atomic call. `index_bits`: the index keeps its entries' hash bits (Store::keep_index_bits),
// so that growing (a low estimate of the distinct lines) never reads the log back.
inline Result with_store(Store& s, std::vector<Input> inputs, int out_fd, int dropped_fd, const Options& opt,
                         bool batches, bool index_bits, Pipeline::Tick tick) {
    if (index_bits) s.keep_index_bits();
    Pipeline p(std::move(inputs), out_fd, dropped_fd, s.hasher(), opt, std::move(tick));
    struct Rollback {
        Store& s;
        ~Rollback() {
            if (s.in_batch()) {
                try {
                    s.rollback_batch();
                } catch (...) {
                }
            }
        }
    } rollback{s};
    std::vector<KeySpan> keys;  // the block's keys, as the store takes them
    return p.run(
        [&](Block& b, size_t n) -> size_t {
            if (batches) s.begin_batch();
            add_block_to_store(s, b, n, keys);
            return n;
        },
        [&] {
            if (batches) s.commit_batch();
        },
        /*write_behind=*/!batches);
}

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
        if (!first) {
            for (size_t i = 0; i < inputs.size(); ++i)
                if (inputs[i].fd >= 0 && ::lseek(inputs[i].fd, static_cast<off_t>(starts[i]), SEEK_SET) < 0)
                    throw IoError(errno, 0, i, "cannot read input again");
        }
        ++run.passes;
        // Lines from `limit` on may still be undecided (a waiting range's): not written yet.
        auto limit = [&] {
            uint64_t l = ~uint64_t(0);
            for (const HashRange& w : waiting) l = std::min(l, w.from_line);
            return l;
        };
        uint64_t base = 0;  // the block's first line
        uint64_t keys_digest = 0;
        // The caller's tick sees the lines and bytes of every pass so far (its rates stay rates).
        Pipeline::Tick pass_tick;
        if (tick)
            pass_tick = [&](const Result& now) {
                Result sum = now;
                sum.lines += read_before.lines;
                sum.bytes += read_before.bytes;
                return tick(sum);
            };
        Pipeline p(pass_inputs, out_fd, dropped_fd, hasher, opt, pass_tick);
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
                if (lanes > 1 && lane[1].picked_count) {
                    helper->start([&] { fill(lane[1]); });
                    try {
                        fill(lane[0]);
                    } catch (...) {
                        helper->wait();  // (its own error, if any, gives way to this one)
                        throw;
                    }
                    helper->wait();
                } else {
                    fill(lane[0]);
                }
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
        if (!first && (r.lines != total.lines || r.bytes != total.bytes || keys_digest != first_keys_digest))
            throw InputChanged("the input changed while it was read again (fewer or other lines)");
        if (first) {
            total.lines = r.lines;
            total.bytes = r.bytes;
            total.status = r.status;
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
        if (r.status != Status::done) break;  // (a key too long: no later pass reads past it)
    }
    for (const Lane& l : lane) run.grows += l.set->grows();
    if (info) *info = run;
    return total;
}

}  // namespace dedup
}  // namespace cuckoo

#endif  // !defined(_WIN32)
