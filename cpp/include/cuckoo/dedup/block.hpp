// The dedup pipeline's blocks (cuckoo/dedup.hpp has the whole picture): the options and result
// of a run, its inputs, the blocks read from them, and how a block's lines are found (a vector
// scan for newlines) and hashed. A line ends at '\n'; its key is the line without the '\n' and
// one '\r' before it. With `-z` (Framing::record_end 0) a line ends at a NUL byte instead, and its
// key is the line without the NUL: the scans below take the end byte as an argument.
//
// POSIX only, like the whole pipeline.
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

#include "cuckoo/dedup/framing.hpp"
#include "cuckoo/fault.hpp"
#include "cuckoo/hash_block.hpp"

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
    // How blocks become records and keys (dedup/framing.hpp): whole lines unless told otherwise.
    Framing framing;
};

// The smallest block lines_per_block sizes (unless `block` is smaller).
constexpr size_t kMinAdaptiveBlock = size_t(256) << 10;
// Lines a block of the one-pass paths with producers (the filter path, the windowed dedup:
// Options::lines_per_block): the table or window is the calling thread's work, and smaller
// blocks in flight keep the run's memory down.
constexpr size_t kStreamLinesPerBlock = 16384;

// bad_record: a record that cannot be keyed (not valid CSV or JSON, or without its key field)
// ended the run after the records before it (Result::bad_*).
enum class Status { done, full, key_too_long, bad_record };

struct Result {
    uint64_t lines = 0;  // lines applied (read and decided)
    uint64_t kept = 0;
    uint64_t bytes = 0;  // input bytes of those lines (a virtual '\n' not counted)
    double expected_false = 0.0;  // filter: sum over blocks of kept x mean expected FPR
    Status status = Status::done;
    // Status::bad_record: which input, the line its record starts on (counted as Input::first_line
    // says), whether it was invalid or missing its key, and the framing's message.
    size_t bad_input = 0;
    uint64_t bad_line = 0;
    KeyStatus bad_why = KeyStatus::found;
    std::string message;
};

struct Input {
    int fd;  // -1: no more than the prefix
    std::vector<unsigned char> prefix;  // bytes already read from fd by the caller, read first
    // The most bytes read from fd (after the prefix): the exact path's later passes read what the
    // first one read, so that lines appended to a file during the run (a log being written) are
    // left out of every pass alike, not read by the later ones only.
    uint64_t limit = ~uint64_t(0);
    // The line number of the first byte the pipeline reads from it (after a CSV header the caller
    // read: 1 + the header's lines), for the line numbers of bad records.
    uint64_t first_line = 1;
    // The byte offset (after a CSV header) of the first byte the pipeline reads from it: where
    // the run journal counts its positions from (a resumed run starts inside an input).
    uint64_t first_byte = 0;
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

// The keys of one hash batch of a keyed block (Block::kHashBatch records), framed by the thread
// that claimed the batch (hash_unclaimed): each batch has its own key buffer, so that both threads
// frame the keys of one block at once. What stopped it is kept here until finish_records, after
// every batch is done, cuts the block at the first batch that stopped.
struct KeyBatch {
    KeyScratch scratch;
    FrameStop stop;           // stop.record: the record's index in the block
    bool too_long = false;    // a key longer than max_key stopped it (it wins over a later stop)
    size_t good = 0;          // its records before the stop that have their keys
    uint64_t newlines = 0;    // the '\n' bytes of those records
    std::exception_ptr error; // what framing it threw (no memory): the block's error
};

struct Block {
    uint64_t seq = 0;
    Bytes data;
    size_t used = 0;           // bytes of whole lines (a virtual '\n' included)
    bool virtual_nl = false;   // its last '\n' (or record end byte) was added
    bool last_input = false;   // a block of the last input
    bool too_long = false;     // the line after this block's lines has a key longer than max_key
    bool bad = false;          // the record after this block's records cannot be keyed (stop)
    size_t input = 0;          // the input it was read from (a block never spans two)
    bool end = false;          // no more input
    std::exception_ptr error;  // what reading it threw
    std::unique_ptr<uint64_t[]> line_end;  // one past each line's '\n' (line_count of them)
    size_t line_count = 0, line_cap = 0;
    // How many record ends the read already listed in line_end (a quoted framing: the read scans
    // for them anyway, csv_scan_ends), or kEndsNotListed: split_records then scans the block.
    static constexpr size_t kEndsNotListed = SIZE_MAX;
    size_t listed_ends = kEndsNotListed;
    std::vector<uint64_t> hashes;
    std::unique_ptr<bool[]> keep;
    size_t keep_cap = 0;
    // The lines apply() lets the output take: [write_from, write_to) of those applied (the exact
    // path's later passes write only lines no pass wrote and every pass has decided). Reset to
    // all of them with each block read.
    size_t write_from = 0, write_to = SIZE_MAX;
    // use_formatted: the output side writes `formatted` (what apply() made of the kept lines of
    // [write_from, write_to), in order: --count's records with their counts, dedup/counted.hpp)
    // instead of the kept lines as read. The dropped side writes the lines as read.
    bool use_formatted = false;
    Bytes formatted;
    // Hashing in batches of kHashBatch lines, which the producer that split the block and the
    // calling thread that takes it claim in turn (hash_unclaimed): when the producers are the
    // slower side, the calling thread hashes what they have not reached instead of waiting.
    // Measured (Zen 4, KVM guest, 2 threads, filter path, 5 interleaved runs, min / median s):
    // real text 0.50 / 0.55 -> 0.43 / 0.46, URL lines 0.36 / 0.44 -> 0.33 / 0.36, hex lines
    // (where the inserts are the slower side) unchanged.
    static constexpr size_t kHashBatch = 1024;
    size_t hash_batches = 0;
    // Keyed records (Options::framing other than lines): each record's key (dedup/framing.hpp)
    // in its batch's key buffer, why the block stopped early, and its '\n' bytes (a CSV record
    // may hold several), for line numbers. The producer finds the record ends; the keys are
    // framed batch by batch with the hashing, by whichever thread claims the batch (frame_batch),
    // and finish_records makes the block of them.
    bool keyed = false;
    const Framing* framing = nullptr;  // (keyed: Options::framing of the run)
    uint64_t max_key = ~uint64_t(0);
    bool unclosed = false;  // the input ended inside an open quote after the block's records
    std::unique_ptr<KeyRef[]> key_refs;
    size_t key_cap = 0;
    std::vector<std::unique_ptr<KeyBatch>> key_batches;
    FrameStop stop;
    uint64_t newlines = 0;
    std::atomic<size_t> hash_claimed{0};        // batches handed out (may pass hash_batches)
    std::atomic<bool> producer_hashing{false};  // the producer may still hash (or claim) a batch
    size_t lines() const noexcept { return line_count; }
    // Whole lines: a '\r' before the '\n' is not part of the key (false with `-z`: there is no
    // '\n', and a '\r' before the NUL is data).
    bool strip_cr = true;
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
    // Line j's key: the line without its '\n' and one '\r' before it; a keyed record's, its
    // framing's key.
    KeySpan key(size_t j) const noexcept {
        if (keyed) {
            const KeyRef r = key_refs[j];
            const std::string& keys = key_batches[j / kHashBatch]->scratch.keys;
            return KeySpan{reinterpret_cast<const unsigned char*>(keys.data()) + r.off, static_cast<size_t>(r.len)};
        }
        const size_t start = j ? line_end[j - 1] : 0, end = line_end[j] - 1;
        const unsigned char* p = data.p.get();
        return KeySpan{p + start, end - start - (strip_cr && end > start && p[end - 1] == '\r')};
    }
};

// Calls line(end) with one past each `end_byte` ('\n' unless `-z`) of p[from, to), in order,
// until it returns false; returns where it stopped (to when it went through). The portable form:
// 8 bytes at a time with a bit trick (what ARM and s390x run; the tests call it on x86 too).
template <class Line>
size_t for_each_newline_portable(const unsigned char* p, size_t from, size_t to, Line&& line,
                                 unsigned char end_byte = '\n') {
    size_t i = from;
    constexpr uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    for (; i + 8 <= to; i += 8) {
        // Little-endian order on every CPU: the lowest set bit of the mask is then the first byte.
        const uint64_t w = load_le64(p + i) ^ (ones * end_byte);
        uint64_t mask = (w - ones) & ~w & highs;  // the high bit of each zero byte (exact below the first)
        while (mask) {
            const unsigned byte = static_cast<unsigned>(__builtin_ctzll(mask)) / 8;
            if (p[i + byte] == end_byte && !line(i + byte + 1)) return i + byte + 1;
            mask &= mask - 1;
        }
    }
    for (; i < to; ++i)
        if (p[i] == end_byte && !line(i + 1)) return i + 1;
    return to;
}

// Room newline_ends needs past the newlines it finds: it writes a few entries beyond its count.
constexpr size_t kNewlineSlack = 8;

// Writes one past each '\n' (each `end_byte`) of p[0, n) to ends[0..), in order, and returns how many there are;
// ends needs room for that many plus kNewlineSlack. On x86 it takes 64 bytes at a time (four
// SSE2 compares into one 64-bit mask) and writes the first four ends of a mask unconditionally:
// a window of 16-70-byte lines holds one to four, so there is no branch a line to mispredict
// (the 16-byte scan with a callback a newline that this replaces mispredicted about once a
// line).
inline size_t newline_ends(const unsigned char* p, size_t n, uint64_t* ends, unsigned char end_byte = '\n') noexcept {
    size_t count = 0, i = 0;
#if defined(__SSE2__)
    const __m128i nl = _mm_set1_epi8(static_cast<char>(end_byte));
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
    for_each_newline_portable(
        p, i, n,
        [&](size_t e) {
            ends[count++] = e;
            return true;
        },
        end_byte);
    return count;
}

// Sizes a split block's per-line arrays (hashes, keep flags) for n lines, and its hash batches.
inline void size_line_arrays(Block& b, size_t n) {
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

// Room in line_end for every line (or record) a block of b.used bytes can hold (each is at least
// its '\n'): no check per line. The entries are not initialized: only those of the lines are
// ever written (and take memory), and the slack of 1/8 keeps a block a little larger than the last
// from allocating again.
// `bytes`: the block's size to make room for (b.used by default); `keep`: the entries already
// written that a larger array must carry over (the read lists a CSV block's record ends while
// the block grows: Block::listed_ends).
inline void reserve_line_ends(Block& b, size_t bytes = SIZE_MAX, size_t keep = 0) {
    if (bytes == SIZE_MAX) bytes = b.used;
    if (b.line_cap < bytes + kNewlineSlack) {
        const size_t cap = bytes + bytes / 8 + kNewlineSlack;
        fault::before_allocation();
        std::unique_ptr<uint64_t[]> grown(new uint64_t[cap]);
        if (keep) std::memcpy(grown.get(), b.line_end.get(), keep * sizeof(uint64_t));
        b.line_end = std::move(grown);
        b.line_cap = cap;
    }
}

// Splits the block's lines (line_end) and sizes its per-line arrays; marks too_long (and cuts the
// block before it) at the first key longer than max_key. The keys are hashed after, by
// hash_unclaimed (possibly two threads at once, each claiming batches: Block::hash_claimed).
// `end_byte`: '\n', or 0 with `-z`.
inline void split_lines(Block& b, uint64_t max_key, unsigned char end_byte = '\n') {
    b.keyed = false;
    b.strip_cr = end_byte == '\n';
    b.line_count = 0;
    b.hash_batches = 0;
    const unsigned char* p = b.data.p.get();
    reserve_line_ends(b);
    size_t n = newline_ends(p, b.used, b.line_end.get(), end_byte);
    if (max_key < b.used) {  // a key may pass max_key: the block ends before the first that does
        uint64_t start = 0;
        for (size_t j = 0; j < n; ++j) {
            const uint64_t e = b.line_end[j];
            uint64_t klen = e - 1 - start;
            if (b.strip_cr && klen && p[e - 2] == '\r') --klen;
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
    b.newlines = n;
    size_line_arrays(b, n);
}

// '\n' bytes in p[0, n).
inline uint64_t count_newlines(const unsigned char* p, size_t n) noexcept {
    uint64_t count = 0;
    for_each_newline_portable(p, 0, n, [&](size_t) {
        ++count;
        return true;
    });
    return count;
}

// Splits a block of keyed records (Options::framing other than lines) into records: their ends
// (for CSV, the '\n's outside quotes). Their keys are framed with the hashing (frame_batch), and
// finish_records then cuts the block before a record that cannot be keyed, or whose key is
// longer than max_key (b.bad, b.stop / b.too_long): the run stops after the records before it.
inline void split_records(Block& b, const Framing& f, uint64_t max_key) {
    b.line_count = 0;
    b.hash_batches = 0;
    b.keyed = true;
    b.framing = &f;
    b.max_key = max_key;
    b.stop = FrameStop{};
    const unsigned char* p = b.data.p.get();
    size_t n = b.listed_ends;
    b.listed_ends = Block::kEndsNotListed;  // (used once: the next read lists its own)
    if (n == Block::kEndsNotListed) {
        reserve_line_ends(b);
        n = f.quoted() ? csv_record_ends(p, b.used, f.fields.quote, b.line_end.get(), f.fields.delimiter)
                       : newline_ends(p, b.used, b.line_end.get());
    }
    // A CSV block ends at a record end, except at the end of the input inside an open quote.
    b.unclosed = n == 0 ? b.used > 0 : b.line_end[n - 1] != b.used;
    if (b.key_cap < n + 1) {
        const size_t cap = n + n / 8 + 1;
        fault::before_allocation();
        b.key_refs.reset(new KeyRef[cap]);
        b.key_cap = cap;
    }
    b.line_count = n;
    size_line_arrays(b, n);
    while (b.key_batches.size() < b.hash_batches) {
        fault::before_allocation();
        b.key_batches.emplace_back(new KeyBatch());
    }
}

// Frames the keys of batch t of a block split_records split (the thread that claimed it). An
// exception (no memory) is kept for finish_records, which makes it the block's error.
inline void frame_batch(Block& b, size_t t) noexcept {
    KeyBatch& kb = *b.key_batches[t];
    const size_t first = t * Block::kHashBatch, count = std::min(Block::kHashBatch, b.lines() - first);
    kb.stop = FrameStop{};
    kb.too_long = false;
    kb.good = 0;
    kb.newlines = 0;
    kb.error = nullptr;
    const Framing& f = *b.framing;
    const unsigned char* p = b.data.p.get();
    const uint64_t* ends = b.line_end.get();
    const size_t begin = first ? static_cast<size_t>(ends[first - 1]) : 0;
    try {
        // The keys are parts of their records (a few bytes more for several CSV columns'
        // lengths, or a JSON number written out): room for about the batch's bytes, through the
        // allocation hook (tests/test_dedup_faults.py), so that framing rarely grows it itself.
        const size_t bytes = static_cast<size_t>(ends[first + count - 1]) - begin;
        if (kb.scratch.keys.capacity() < bytes + 64) {
            fault::before_allocation();
            kb.scratch.keys.reserve(bytes + bytes / 8 + 64);
        }
        size_t good = frame_records(f, p, begin, ends + first, count, b.key_refs.get() + first, kb.scratch, kb.stop);
        if (kb.stop.stopped) kb.stop.record += first;
        if (b.max_key != ~uint64_t(0)) {
            for (size_t j = 0; j < good; ++j) {
                if (b.key_refs[first + j].len > b.max_key) {
                    good = j;
                    kb.too_long = true;
                    kb.stop = FrameStop{};
                    break;
                }
            }
        }
        kb.good = good;
        const size_t good_end = good ? static_cast<size_t>(ends[first + good - 1]) : begin;
        kb.newlines = f.quoted() ? count_newlines(p + begin, good_end - begin) : good;
    } catch (...) {
        kb.error = std::current_exception();
        kb.good = 0;
    }
}

// After every batch of a keyed block was framed and hashed: its records are those before the
// first record that stopped a batch (or the input's unclosed quote), its newlines theirs.
inline void finish_records(Block& b) {
    if (!b.keyed || b.error) return;
    const size_t n = b.lines();
    size_t good = n;
    uint64_t newlines = 0;
    for (size_t t = 0; t < b.hash_batches; ++t) {
        KeyBatch& kb = *b.key_batches[t];
        if (kb.error) {
            b.error = kb.error;
            kb.error = nullptr;
            return;
        }
        newlines += kb.newlines;
        const size_t first = t * Block::kHashBatch;
        if (kb.good < std::min(Block::kHashBatch, n - first)) {
            good = first + kb.good;
            if (kb.too_long)
                b.too_long = true;
            else
                b.stop = std::move(kb.stop);
            break;
        }
    }
    if (good == n && b.unclosed) {
        b.stop = FrameStop{true, KeyStatus::invalid, n, "not valid CSV: a quoted field is not closed at the end of the input"};
    }
    if (b.stop.stopped) b.bad = true;
    if (good < n || b.unclosed) {  // (the records after the cut, and a virtual '\n' with them, are not this block's)
        b.used = good ? static_cast<size_t>(b.line_end[good - 1]) : 0;
        b.virtual_nl = false;
    }
    b.line_count = good;
    b.newlines = newlines;
}


// Hashes the keys of lines [first, first + count) of a split block into b.hashes (for keyed
// records, within one batch, after frame_batch).
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
            // (The keys' buffer: the block's bytes, or its batch's key buffer for keyed records:
            // [first, first + count) lies in one batch.)
            const std::string* const keys = b.keyed ? &b.key_batches[first / Block::kHashBatch]->scratch.keys : nullptr;
            const unsigned char* const readable_end =
                keys ? reinterpret_cast<const unsigned char*>(keys->data()) + keys->size() : p + b.data.size;
            hash_bytes_block(hasher, ptr, len, m, readable_end, b.hashes.data() + at);
        } else {
            for (unsigned j = 0; j < m; ++j) b.hashes[at + j] = hasher.hash_key(ptr[j], b.key(at + j).len);
        }
    }
}

// Hashes the batches of a split block that no thread claimed yet (framing the keys of a keyed
// block's batch first). Each batch reads only its records' bytes and writes only its own
// entries (hashes, key refs, its KeyBatch), so two threads may run this on one block at once;
// the block's fields that finish_records changes are read by neither.
inline void hash_unclaimed(Block& b, const KeyHasher& hasher) noexcept {
    const size_t n = b.lines();
    for (size_t t; (t = b.hash_claimed.fetch_add(1, std::memory_order_relaxed)) < b.hash_batches;) {
        const size_t first = t * Block::kHashBatch;
        size_t count = std::min(Block::kHashBatch, n - first);
        if (b.keyed) {
            frame_batch(b, t);
            count = b.key_batches[t]->good;
        }
        hash_lines(b, hasher, first, count);
    }
}

// Splits the block's lines, or its records when the framing is keyed (the hashing follows).
inline void split_block(Block& b, const Options& opt) {
    if (opt.framing.keyed())
        split_records(b, opt.framing, opt.max_key);
    else
        split_lines(b, opt.max_key, opt.framing.record_end);
}

// Splits the block's lines or records and hashes their keys (one thread).
inline void split_and_hash(Block& b, const KeyHasher& hasher, const Options& opt) {
    split_block(b, opt);
    hash_unclaimed(b, hasher);
    finish_records(b);
}

// The bytes of lines [b.write_from, k) whose keep flag equals `kept`, in order, into `out` (its
// old bytes dropped). `final`: the block ends the input with a virtual '\n', which is left out.
//
// Two ways to gather, chosen by how often the flag flips from one line to the next. Where it
// flips often (hex lines, whose repeats are a coin toss: a branch on the flag mispredicted
// about every other line), every line is copied to the output's end and the end moves on by
// its length when the line is selected: one 32-byte copy for lines up to 32 bytes (it may
// read past the line, within the block's buffer, and write past it, within out's slack),
// memcpy beyond. Where it flips rarely (real text, whose repeats come in runs: the copies of
// files seen before), runs of selected lines are copied whole, which the branchless copy made
// slower there (perf, one thread: the calling thread's loop 4.4-5.4% -> 7.5-8.6% of the
// samples; on hex lines 8.6% -> 5.9%).
inline void gather_lines(const Block& b, size_t k, bool kept, bool final, Bytes& out) {
    constexpr size_t kGather = 32;
    const size_t from = b.write_from;
    const unsigned char* p = b.data.p.get();
    const size_t first = from ? b.line_end[from - 1] : 0, last = k > from ? b.line_end[k - 1] : first;
    out.size = 0;
    out.reserve(last - first + kGather);
    size_t flips = 0;
    for (size_t j = from + 1; j < k; ++j) flips += b.keep[j] != b.keep[j - 1];
    bool last_sel = false;  // (line k - 1 selected)
    if (flips * 4 > k - from) {
        unsigned char* const dst = out.p.get();
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
        out.size = at;
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
                out.append(p + run_start, start - run_start);
                in_run = false;
            }
        }
        if (in_run) out.append(p + run_start, last - run_start);
        last_sel = in_run;
    }
    if (final && k > from && last_sel && out.size) --out.size;
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

}  // namespace dedup
}  // namespace cuckoo

#endif  // !defined(_WIN32)
