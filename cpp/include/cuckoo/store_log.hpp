// The append-only log of cuckoo::Store (see store.hpp and docs/store.md): a file header, then
// records, each at a multiple of 8 bytes:
//
//   header (64 bytes, little-endian)
//     0  magic "CUCKOOKV"          8   u32 version (1)       12  u32 hash algorithm
//     16 u64 seed                  24  u32 tag bits          28  u32 flags (0)
//     32 u64 log id (random: ties an index snapshot to this log)
//     40 u32 reserved (0)          44  u32 checksum of bytes [0, 44)
//     48 u64 synced end: every byte before it was made durable by sync()
//     56 u32 checksum of bytes [48, 56)                      60  u32 reserved (0)
//   record at offset o
//     0  u32 checksum: low 32 bits of XXH3-64(bytes [4, 12 + key + value), seed o)
//     4  u32 key length            8   u32 value length, or 0xFFFFFFFF for a tombstone
//     12 key, value, zero padding to a multiple of 8
//
// The checksum is seeded with the record's own offset, so a record is only valid where it was
// written: stale bytes from another position never pass for a record. The synced end is a
// separate, separately checked field so that rewriting it (at every sync) can never make the
// immutable part of the header unreadable; a torn write of it reads as 0, which only makes
// recovery treat more of the log as an unsynced tail.
//
// POSIX only (open, pwrite, mmap, flock, fdatasync). Appends are buffered in memory and written
// with pwrite; reads of written records go through a read-only shared mapping of the file (a
// random read costs ~15 ns where a pread costs ~700 ns on the development machine), records
// still in the buffer are read from it.
#pragma once

#if defined(_WIN32)
#error "cuckoo::Store (store_log.hpp) needs POSIX files (mmap, flock, fdatasync): it is not available on Windows"
#endif

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "cuckoo/errors.hpp"  // FormatError, StoreLockedError, StoreForkedError
#include "cuckoo/fault.hpp"
#include "cuckoo/hash.hpp"

namespace cuckoo {

// How many fork()s this process descends from since the library was loaded: a child handler of
// pthread_atfork bumps it, so a store compares it with its value at open (one load, no system
// call: getpid() is one since glibc 2.25) to know that it is used in another process than the one
// that opened it. os.fork() runs the atfork handlers; a raw clone() does not (not supported).
inline std::atomic<uint64_t> g_fork_generation{0};
inline uint64_t fork_generation() noexcept {
    static const bool registered = [] {
        ::pthread_atfork(nullptr, nullptr, [] { g_fork_generation.fetch_add(1, std::memory_order_relaxed); });
        return true;
    }();
    (void)registered;
    return g_fork_generation.load(std::memory_order_relaxed);
}

namespace store_format {
constexpr char kLogMagic[8] = {'C', 'U', 'C', 'K', 'O', 'O', 'K', 'V'};
constexpr uint32_t kLogVersion = 1;
constexpr uint64_t kHeaderSize = 64;
constexpr uint64_t kRecordHeader = 12;
constexpr uint64_t kAlign = 8;
constexpr uint32_t kTombstone = 0xFFFFFFFFu;
// Keys and values of at most 2^31 - 1 bytes; the log of at most 2^35 bytes (32 GiB), so that an
// offset / 8 fits the index's 32-bit slots.
constexpr uint64_t kMaxFieldLength = (uint64_t(1) << 31) - 1;
constexpr uint64_t kMaxLogBytes = uint64_t(1) << 35;

inline uint64_t padded(uint64_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }
inline uint64_t record_size(uint64_t key_len, uint64_t value_len) { return padded(kRecordHeader + key_len + value_len); }
inline uint32_t checksum32(const void* p, size_t n, uint64_t seed) { return static_cast<uint32_t>(xxh3_64(p, n, seed)); }
inline void put32(unsigned char* p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
}  // namespace store_format

struct LogHeader {
    HashAlgorithm algorithm = HashAlgorithm::xxh3;
    uint64_t seed = 0;
    unsigned tag_bits = 16;
    uint64_t log_id = 0;
    uint64_t synced_end = 0;
};

// A record as read from the log (pointers into the mapping or the append buffer: valid until
// the next append or remap).
struct RecordView {
    const unsigned char* key = nullptr;
    uint32_t key_len = 0;
    const unsigned char* value = nullptr;
    uint32_t value_len = 0;
    bool tombstone = false;
    uint64_t size = 0;  // bytes the record takes in the log, padding included
};

[[noreturn]] inline void throw_errno(const std::string& what) {
    throw std::system_error(errno, std::generic_category(), what);
}

// Deterministic I/O fault injection for the tests (tests/test_store_faults.py reaches it only
// through cuckoo._core._testing_io_fault): every write-like call of the store's files (a pwrite,
// an fdatasync, the snapshot's write) counts one; the nth after arm() fails with `error` (EFBIG,
// ENOSPC, ...), a pwrite after really writing the first half of its bytes, as a full disk does;
// `persistent`: every later one too (a disk that stays full). Off it costs one relaxed load per
// write. Single-threaded tests only (the countdown is not exact under concurrent writers).
namespace io_testing {
inline std::atomic<int64_t> countdown{0};  // 0: off; n > 0: the nth write from now fails; -1: all fail
inline std::atomic<int> error{0};
inline std::atomic<bool> persistent{false};
inline std::atomic<uint64_t> writes{0};  // write-like calls seen since the last arm()
inline void arm(int64_t nth, int err, bool stay) noexcept {
    error.store(err);
    persistent.store(stay);
    writes.store(0);
    countdown.store(nth);
}
// Whether this write must fail (errno is then set).
inline bool fail_now() noexcept {
    writes.fetch_add(1, std::memory_order_relaxed);
    const int64_t c = countdown.load(std::memory_order_relaxed);
    if (c == 0) return false;
    if (c > 1) {
        countdown.store(c - 1);
        return false;
    }
    countdown.store(persistent.load() ? -1 : 0);
    errno = error.load();
    return true;
}
}  // namespace io_testing

// Writes all n bytes at `offset` (retrying short writes and EINTR); false with errno set on error.
inline bool pwrite_all(int fd, const unsigned char* data, size_t n, uint64_t offset) {
    if (io_testing::fail_now()) {
        const int e = errno;
        if (n / 2 && ::pwrite(fd, data, n / 2, static_cast<off_t>(offset)) < 0) return false;
        errno = e;
        return false;
    }
    size_t done = 0;
    while (done < n) {
        const ssize_t w = ::pwrite(fd, data + done, n - done, static_cast<off_t>(offset + done));
        if (w < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        done += static_cast<size_t>(w);
    }
    return true;
}

class LogFile {
public:
    LogFile() = default;
    LogFile(const LogFile&) = delete;
    LogFile& operator=(const LogFile&) = delete;
    ~LogFile() { close_quietly(); }

    // Opens (creating when writable and absent) the log at `path`, which must name a regular
    // file (not empty, no NUL byte: the log, its snapshot and its compaction file would be one).
    // path() is then the real path (symlinks resolved): the snapshot and compaction files sit
    // beside the file itself, and compaction replaces the file, never a link to it.
    //
    // A writable open takes an exclusive flock on the log file itself (a second writer, by
    // whatever name or link, gets StoreLockedError). Compaction replaces the log's inode: it
    // locks the new file before renaming it into place, and a writer that locked the old inode
    // after that sees that the path no longer names it, and opens again.
    void open_path(const std::string& path, bool writable, const LogHeader& fresh, bool lock = true) {
        if (path.empty()) throw std::invalid_argument("the store's path is empty");
        if (path.find('\0') != std::string::npos) throw std::invalid_argument("embedded null byte in the store's path");
        writable_ = writable;
        for (int attempt = 0;; ++attempt) {
            // O_NONBLOCK: opening a FIFO must not wait for a writer; anything but a regular file
            // is refused below (regular files ignore the flag).
            fd_ = ::open(path.c_str(), (writable ? O_RDWR | O_CREAT : O_RDONLY) | O_NONBLOCK | O_CLOEXEC, 0644);
            if (fd_ < 0) throw_errno("cannot open " + path);
            struct stat st;
            if (::fstat(fd_, &st) != 0) throw_errno("cannot stat " + path);
            if (!S_ISREG(st.st_mode)) throw std::invalid_argument(path + " is not a regular file");
            if (!(writable && lock)) break;
            if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
                if (errno == EWOULDBLOCK)
                    throw StoreLockedError("the store " + path + " is open for writing in another process or object "
                                           "(one writer at a time; open it with readonly=True to read)");
                throw_errno("cannot lock " + path);
            }
            struct stat now;
            if (::stat(path.c_str(), &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino) break;
            if (attempt == 8) throw StoreLockedError("the store " + path + " keeps being replaced (compacted) by another writer");
            ::close(fd_);  // a compaction replaced the file we locked: lock the one at the path now
            fd_ = -1;
        }
        char real[PATH_MAX];
        path_ = ::realpath(path.c_str(), real) ? std::string(real) : path;
        attach(fresh);
    }

    // Uses an already open, empty, read-write file descriptor (an anonymous temporary file);
    // takes ownership of a duplicate of it.
    void open_fd(int fd, const LogHeader& fresh) {
        fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (fd_ < 0) throw_errno("cannot use the temporary file");
        writable_ = true;
        anonymous_ = true;
        attach(fresh);
    }

    const LogHeader& header() const noexcept { return header_; }
    bool writable() const noexcept { return writable_; }
    bool anonymous() const noexcept { return anonymous_; }
    const std::string& path() const noexcept { return path_; }
    // Bytes of the log (written or buffered): the offset of the next record.
    uint64_t end() const noexcept { return file_end_ + buffer_.size(); }
    uint64_t file_end() const noexcept { return file_end_; }

    // Appends a record; returns its offset. Throws when the log would pass its size limit.
    uint64_t append(const void* key, uint64_t key_len, const void* value, uint64_t value_len, bool tombstone) {
        using namespace store_format;
        if (key_len > kMaxFieldLength || value_len > kMaxFieldLength)
            throw std::length_error("keys and values are limited to 2**31 - 1 bytes");
        const uint64_t size = record_size(key_len, value_len);
        const uint64_t offset = end();
        if (offset + size > kMaxLogBytes)
            throw std::length_error("the store's log reached its limit of 32 GiB: compact() it");
        const size_t at = buffer_.size();
        buffer_.resize(at + size);
        unsigned char* r = buffer_.data() + at;
        put32(r + 4, static_cast<uint32_t>(key_len));
        put32(r + 8, tombstone ? kTombstone : static_cast<uint32_t>(value_len));
        if (key_len) std::memcpy(r + kRecordHeader, key, key_len);
        if (value_len) std::memcpy(r + kRecordHeader + key_len, value, value_len);
        std::memset(r + kRecordHeader + key_len + value_len, 0, size - kRecordHeader - key_len - value_len);
        put32(r, checksum32(r + 4, kRecordHeader - 4 + key_len + value_len, offset));
        if (buffer_.size() >= kFlushBytes && !held_) flush();
        return offset;
    }

    // Reads the record at `offset` (< end()) and checks it: its lengths against the log's end
    // (the offset came from the index, which may have been loaded from a snapshot: a read never
    // leaves the log) and its checksum (a record damaged after its snapshot was written raises
    // FormatError instead of answering with damaged bytes; ~5 ns for a short record).
    RecordView read(uint64_t offset) {
        using namespace store_format;
        const unsigned char* p = at(offset);
        const uint64_t avail = end() - offset;
        if (offset >= end() || avail < kRecordHeader) corrupt(offset);
        const uint32_t klen = load_le32(p + 4), vfield = load_le32(p + 8);
        const uint64_t vlen = vfield == kTombstone ? 0 : vfield;
        if (kRecordHeader + uint64_t(klen) + vlen > avail) corrupt(offset);
        if (load_le32(p) != checksum32(p + 4, kRecordHeader - 4 + klen + vlen, offset)) corrupt(offset);
        return view(p, klen, vfield);
    }

    // The record whose checked header at p holds these lengths.
    static RecordView view(const unsigned char* p, uint32_t klen, uint32_t vfield) noexcept {
        using namespace store_format;
        RecordView v;
        const uint64_t vlen = vfield == kTombstone ? 0 : vfield;
        v.key = p + kRecordHeader;
        v.key_len = klen;
        v.value = p + kRecordHeader + klen;
        v.value_len = static_cast<uint32_t>(vlen);
        v.tombstone = vfield == kTombstone;
        v.size = record_size(klen, vlen);
        return v;
    }

    // A read met damage: the log is remembered as damaged (damaged_at()), so that the store
    // refuses writes from then on (appending to a log whose index points at bad bytes would only
    // bury the damage under a fresh snapshot). Readers run concurrently: the first offset wins.
    [[noreturn]] void corrupt(uint64_t offset) const {
        uint64_t none = kNoDamage;
        damaged_at_.compare_exchange_strong(none, offset, std::memory_order_relaxed);
        throw FormatError("the store's log is corrupt at offset " + std::to_string(offset) +
                          " (a record fails its checksum or runs past the log): the store refuses writes; "
                          "open it with repair=True to rebuild it from its intact records");
    }
    static constexpr uint64_t kNoDamage = ~uint64_t(0);
    // Offset of the first damaged record a read met (kNoDamage: none).
    uint64_t damaged_at() const noexcept { return damaged_at_.load(std::memory_order_relaxed); }

    // Validates the record at `offset` of the written file (recovery): its lengths fit before
    // `limit` and its checksum matches. Returns false for a torn or corrupt record.
    bool valid_record(uint64_t offset, uint64_t limit, RecordView& out) {
        using namespace store_format;
        if (limit - offset < kRecordHeader) return false;
        const unsigned char* p = at(offset);
        const uint32_t klen = load_le32(p + 4), vfield = load_le32(p + 8);
        const uint64_t vlen = vfield == kTombstone ? 0 : vfield;
        if (klen > kMaxFieldLength || vlen > kMaxFieldLength) return false;
        const uint64_t size = record_size(klen, vlen);
        if (size > limit - offset) return false;
        if (load_le32(p) != checksum32(p + 4, kRecordHeader - 4 + klen + vlen, offset)) return false;
        out = view(p, klen, vfield);  // checked here: not through read(), which would checksum again
        return true;
    }

    // Copies bytes [offset, offset + n) of the log (written or buffered) to `out`.
    void read_bytes(uint64_t offset, uint64_t n, unsigned char* out) {
        while (n > 0) {
            const uint64_t part = offset < file_end_ ? std::min(n, file_end_ - offset) : n;
            std::memcpy(out, at(offset), part);
            out += part;
            offset += part;
            n -= part;
        }
    }

    // A reader's log ends before a torn tail it cannot cut.
    void set_readable_end(uint64_t offset) { file_end_ = std::min(file_end_, offset); }

    // Writes buffered records to the file (not yet durable: see sync()). On an error nothing
    // changes: the records stay buffered and whatever part of them reached the file is cut off
    // again, so that no record the program does not count as written can be found by a reopen.
    void flush() {
        if (buffer_.empty()) return;
        // The mapping must cover what is written before file_end_ moves (reads of records below
        // file_end_ go through it): extend it first, so that failing to (ENOMEM) changes nothing.
        reserve_mapping(file_end_ + buffer_.size());
        if (!pwrite_all(fd_, buffer_.data(), buffer_.size(), file_end_)) {
            const int e = errno;
            if (::ftruncate(fd_, static_cast<off_t>(file_end_)) != 0) broken_ = true;
            errno = e;
            throw_errno("cannot write the store's log");
        }
        file_end_ += buffer_.size();
        buffer_.clear();
        if (buffer_.capacity() > 2 * kFlushBytes) buffer_.shrink_to_fit();
    }

    // Room in the append buffer for `bytes` more (up to the flush threshold), so that a batch's
    // appends do not allocate on the way.
    void reserve_buffer(uint64_t bytes) {
        const uint64_t want = buffer_.size() + std::min<uint64_t>(bytes, kFlushBytes);
        if (want <= buffer_.capacity()) return;
        fault::before_allocation();
        buffer_.reserve(static_cast<size_t>(want));
    }

    // Makes the mapping cover the log up to `end` (pages past the file's end are mapped but never
    // touched). Throws std::bad_alloc when the address space is exhausted; the old mapping stays.
    void reserve_mapping(uint64_t end) {
        if (end > map_len_) remap(end);
    }

    // While held, appends are not written to the file however many there are (a batch's records
    // reach the file only when it commits: a crash before that leaves none of them).
    void hold(bool on) noexcept { held_ = on; }

    // Drops every byte of the log from `offset` (>= the synced end) on: buffered ones, and written
    // ones by cutting the file. Undoes the appends of a failed call or a rolled-back batch.
    void rollback(uint64_t offset) {
        if (offset < header_.synced_end) throw std::logic_error("cannot roll the store's log back past its synced end");
        if (offset >= file_end_) {
            buffer_.resize(std::min<uint64_t>(buffer_.size(), offset - file_end_));
            return;
        }
        if (::ftruncate(fd_, static_cast<off_t>(offset)) != 0) {
            broken_ = true;
            throw_errno("cannot cut the store's log back after a failed write");
        }
        buffer_.clear();
        file_end_ = offset;
    }
    // Set when bytes the program does not count as written could not be cut from the file.
    bool broken() const noexcept { return broken_; }

    // Makes every record appended so far durable, then records that in the header (made durable
    // by the next sync: until then recovery only treats a little more of the log as unsynced).
    void sync() {
        flush();
        if (anonymous_) return;
        durable_sync();
        write_synced_end(file_end_);
    }

    // Cuts the file at `offset` (recovery of a torn tail). Only for writable logs.
    void truncate(uint64_t offset) {
        buffer_.clear();
        if (::ftruncate(fd_, static_cast<off_t>(offset)) != 0) throw_errno("cannot truncate the store's log");
        file_end_ = offset;
        if (header_.synced_end > offset) write_synced_end(offset);
        durable_sync();
    }

    // Drops the pages of [lo, hi) of the mapping from this process (they stay in the page cache):
    // bulk passes over the log call this behind them, so that reading a log of any size keeps
    // the process's memory bounded.
    void release(uint64_t lo, uint64_t hi) noexcept {
        if (!map_) return;
        const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
        lo = lo / page * page;
        hi = std::min(hi, map_len_);
        if (hi > lo) ::madvise(const_cast<unsigned char*>(map_) + lo, hi - lo, MADV_DONTNEED);
    }
    void release_all() noexcept { release(0, map_len_); }

    // Replaces this log by `fresh` (a complete, durable log beside it, opened with its own lock
    // and mapping): renames it over the path and takes over its descriptor, lock and mapping, so
    // that the path is locked at every moment and nothing can fail after the rename. Used by
    // compaction.
    void replace_with(LogFile& fresh) {
        flush();
        fresh.flush();
        if (::rename(fresh.path_.c_str(), path_.c_str()) != 0) throw_errno("cannot replace " + path_);
        sync_directory();
        std::swap(fd_, fresh.fd_);
        std::swap(map_, fresh.map_);
        std::swap(map_len_, fresh.map_len_);
        header_ = fresh.header_;
        file_end_ = fresh.file_end_;
        buffer_.clear();
        fresh.close_quietly();  // the old log's descriptor (its lock) and mapping
    }

    // fdatasync where it exists; on macOS, F_FULLFSYNC (its fsync does not reach the medium).
    void durable_sync() {
        if (io_testing::fail_now()) throw_errno("cannot sync the store's log");
#if defined(__APPLE__)
        if (::fcntl(fd_, F_FULLFSYNC) != 0 && ::fsync(fd_) != 0) throw_errno("cannot sync the store's log");
#else
        if (::fdatasync(fd_) != 0) throw_errno("cannot sync the store's log");
#endif
    }

    void sync_directory() {
        std::string dir = path_;
        const size_t slash = dir.find_last_of('/');
        dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : dir.substr(0, slash));
        const int dfd = ::open(dir.c_str(), O_RDONLY | O_CLOEXEC);
        if (dfd >= 0) {
            ::fsync(dfd);
            ::close(dfd);
        }
    }

    // Writes what is buffered and closes; the file and the lock are released even when that
    // write fails (the error is thrown after).
    void close() {
        try {
            if (fd_ >= 0 && writable_) flush();
        } catch (...) {
            close_quietly();
            throw;
        }
        close_quietly();
    }
    // Closes without writing anything (a copy inherited through fork(): its buffer belongs to the
    // parent). The parent's lock stays: it belongs to the open file, which the parent holds too.
    void abandon() noexcept {
        buffer_.clear();
        close_quietly();
    }
    bool is_open() const noexcept { return fd_ >= 0; }

    uint64_t file_size() const {
        struct stat st;
        if (::fstat(fd_, &st) != 0) throw_errno("cannot stat the store's log");
        return static_cast<uint64_t>(st.st_size);
    }

    // Serializes a header (used for new logs, here and by compaction).
    static void encode_header(const LogHeader& h, unsigned char* out) {
        using namespace store_format;
        std::memset(out, 0, kHeaderSize);
        std::memcpy(out, kLogMagic, 8);
        put32(out + 8, kLogVersion);
        put32(out + 12, static_cast<uint32_t>(h.algorithm));
        store_le64(out + 16, h.seed);
        put32(out + 24, h.tag_bits);
        store_le64(out + 32, h.log_id);
        put32(out + 44, checksum32(out, 44, 0));
        store_le64(out + 48, h.synced_end);
        put32(out + 56, checksum32(out + 48, 8, 0));
    }

private:
    static constexpr size_t kFlushBytes = size_t(1) << 20;

    void attach(const LogHeader& fresh) {
        const uint64_t size = file_size();
        if (size == 0) {
            if (!writable_) throw FormatError("the store " + path_ + " is empty (not a cuckoo store)");
            header_ = fresh;
            header_.synced_end = store_format::kHeaderSize;
            unsigned char h[store_format::kHeaderSize];
            encode_header(header_, h);
            if (!pwrite_all(fd_, h, sizeof h, 0)) {
                const int e = errno;
                if (::ftruncate(fd_, 0) != 0) {}  // leave an empty file, which opens as a new store
                errno = e;
                throw_errno("cannot write " + path_);
            }
            file_end_ = store_format::kHeaderSize;
            remap(file_end_);
            return;
        }
        // The header before the size: a writer records a synced end only after writing up to
        // it, so a reader racing with it still finds the file at least that long.
        read_header();
        file_end_ = file_size();
        remap(file_end_);
    }

    void read_header() {
        using namespace store_format;
        unsigned char h[kHeaderSize];
        ssize_t n = ::pread(fd_, h, kHeaderSize, 0);
        if (n < 0) throw_errno("cannot read " + path_);
        const std::string where = path_.empty() ? std::string("the store") : path_;
        if (static_cast<uint64_t>(n) < kHeaderSize || std::memcmp(h, kLogMagic, 8) != 0)
            throw FormatError(where + " is not a cuckoo store (bad magic or shorter than its 64-byte header)");
        if (load_le32(h + 44) != checksum32(h, 44, 0))
            throw FormatError(where + ": checksum mismatch in the header (offset 0): the file is corrupt");
        if (load_le32(h + 8) != kLogVersion)
            throw FormatError(where + ": unsupported store version " + std::to_string(load_le32(h + 8)));
        const uint32_t alg = load_le32(h + 12);
        const uint32_t tag_bits = load_le32(h + 24);
        if (!valid_hash_algorithm(alg) || tag_bits < 1 || tag_bits > 16 || load_le32(h + 28) != 0)
            throw FormatError(where + ": invalid parameters in the header (offset 0)");
        header_.algorithm = static_cast<HashAlgorithm>(alg);
        header_.seed = load_le64(h + 16);
        header_.tag_bits = tag_bits;
        header_.log_id = load_le64(h + 32);
        header_.synced_end = load_le32(h + 56) == checksum32(h + 48, 8, 0) ? load_le64(h + 48) : 0;
    }

    // Records `end` as the synced end, in the header and (once written) here.
    void write_synced_end(uint64_t end) {
        unsigned char s[12];
        store_le64(s, end);
        store_format::put32(s + 8, store_format::checksum32(s, 8, 0));
        if (!pwrite_all(fd_, s, sizeof s, 48)) throw_errno("cannot write the store's header");
        header_.synced_end = end;
    }

    // Pointer to byte `offset` of the log (< end()). The mapping always covers the written file
    // (remapped only by writers, under their exclusive lock), so concurrent readers never remap.
    const unsigned char* at(uint64_t offset) const {
        if (offset >= file_end_) return buffer_.data() + (offset - file_end_);
        return map_ + offset;
    }

    // Maps at least `end` bytes of the log. The new mapping is made before the old one goes, so
    // a failure (std::bad_alloc for ENOMEM: the address space is exhausted) leaves the old one.
    void remap(uint64_t end) {
        // Reserve address space ahead of the file (pages past its end are never touched), so
        // that a growing log is remapped about log2(size) times.
        uint64_t len = std::max<uint64_t>(uint64_t(64) << 20, map_len_ * 2);
        while (len < end) len *= 2;
        fault::before_allocation();
#if defined(__linux__) && defined(MREMAP_MAYMOVE)
        void* p = map_ ? ::mremap(const_cast<unsigned char*>(map_), map_len_, len, MREMAP_MAYMOVE)
                       : ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd_, 0);
#else
        void* p = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd_, 0);
#endif
        if (p == MAP_FAILED) {
            if (errno == ENOMEM) throw std::bad_alloc();
            throw_errno("cannot map the store's log");
        }
#if !(defined(__linux__) && defined(MREMAP_MAYMOVE))
        unmap();  // the old mapping, now that the new one exists
#endif
        map_ = static_cast<const unsigned char*>(p);
        map_len_ = len;
    }

    void unmap() noexcept {
        if (map_) ::munmap(const_cast<unsigned char*>(map_), map_len_);
        map_ = nullptr;
        map_len_ = 0;
    }

    void close_quietly() noexcept {
        unmap();
        if (fd_ >= 0) ::close(fd_);  // releases the flock of a writer
        fd_ = -1;
    }

    std::string path_;
    int fd_ = -1;
    bool writable_ = false;
    bool anonymous_ = false;
    bool held_ = false;
    bool broken_ = false;
    mutable std::atomic<uint64_t> damaged_at_{kNoDamage};
    LogHeader header_;
    uint64_t file_end_ = 0;
    std::vector<unsigned char> buffer_;
    const unsigned char* map_ = nullptr;
    uint64_t map_len_ = 0;
};

}  // namespace cuckoo
