// The index snapshot of cuckoo::Store (the file path + ".idx", beside the log of store_log.hpp):
// the index as it stood when the log ended at a given offset, so that opening a large store reads
// one file instead of replaying the whole log. A snapshot is a cache: the store checks it against
// its log (store.hpp, load_snapshot) and on any mismatch rebuilds the index from the log instead.
//
//   header (96 bytes, little-endian)
//     0  magic "CUCKOOIX"          8   u32 version (1)       12  u32 tag bits
//     16 u64 log id                24  u64 log end (the records it covers end here)
//     32 u64 bucket count          40  u64 table entries     48  u64 stash entries
//     56 u64 live bytes            64  u64 XXH3 of the log's (up to) 64 bytes before its end
//     72 u64 XXH3 of the body      80  u32 checksum of bytes [0, 80)      84..96 zero
//   body
//     the buckets, 24 bytes each (4 x u16 tag, then 4 x u32 record offset / 8), then the stash
//     entries, 16 bytes each (u64 key hash, u64 record offset)
//
// This header knows the file's layout and its raw I/O; what the fields must agree with (the log,
// the index's limits) is the store's business.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cuckoo/fault.hpp"
#include "cuckoo/hash.hpp"
#include "cuckoo/store_log.hpp"  // throw_errno, pwrite_all, store_format::put32 and checksum32 (POSIX only)

namespace cuckoo {

// A bucket of the store's index: 4 slots of a tag and the offset of a record.
struct StoreBucket {
    uint16_t tag[4];  // 0: empty slot
    uint32_t unit[4];  // record offset / 8
};
static_assert(sizeof(StoreBucket) == 24, "a store bucket is 24 bytes");

// The header fields of a snapshot.
struct SnapshotHeader {
    uint32_t tag_bits = 0;
    uint64_t log_id = 0, log_end = 0;                    // the log it was taken of, where it ended
    uint64_t bucket_count = 0, entries = 0, stash = 0;   // buckets, entries in them, stash entries
    uint64_t live_bytes = 0;                             // bytes of the live records
    uint64_t tail_check = 0;                             // XXH3 of the log's last bytes before log_end
};

namespace store_snapshot {

constexpr uint64_t kHeaderSize = 96;
constexpr uint64_t kBucketBytes = sizeof(StoreBucket);
constexpr uint64_t kStashEntryBytes = 16;
constexpr uint32_t kVersion = 1;

inline void put_bucket(unsigned char* p, const StoreBucket& b) {
    for (unsigned s = 0; s < 4; ++s) {
        p[2 * s] = static_cast<unsigned char>(b.tag[s]);
        p[2 * s + 1] = static_cast<unsigned char>(b.tag[s] >> 8);
        store_format::put32(p + 8 + 4 * s, b.unit[s]);
    }
}

inline StoreBucket get_bucket(const unsigned char* p) {
    StoreBucket b;
    for (unsigned s = 0; s < 4; ++s) {
        b.tag[s] = static_cast<uint16_t>(p[2 * s] | (p[2 * s + 1] << 8));
        b.unit[s] = load_le32(p + 8 + 4 * s);
    }
    return b;
}

// The whole file: the header `h` (its body checksum and its own checksum computed here), the
// buckets, then the stash's (hash, offset) pairs.
template <class Stash>
std::vector<unsigned char> encode(const SnapshotHeader& h, const std::vector<StoreBucket>& buckets, const Stash& stash) {
    const uint64_t body = buckets.size() * kBucketBytes + stash.size() * kStashEntryBytes;
    std::vector<unsigned char> out(kHeaderSize + body);
    unsigned char* p = out.data() + kHeaderSize;
    for (const StoreBucket& b : buckets) {
        put_bucket(p, b);
        p += kBucketBytes;
    }
    for (const auto& e : stash) {
        store_le64(p, e.first);
        store_le64(p + 8, e.second);
        p += kStashEntryBytes;
    }
    unsigned char* hd = out.data();
    std::memcpy(hd, "CUCKOOIX", 8);
    store_format::put32(hd + 8, kVersion);
    store_format::put32(hd + 12, h.tag_bits);
    store_le64(hd + 16, h.log_id);
    store_le64(hd + 24, h.log_end);
    store_le64(hd + 32, h.bucket_count);
    store_le64(hd + 40, h.entries);
    store_le64(hd + 48, h.stash);
    store_le64(hd + 56, h.live_bytes);
    store_le64(hd + 64, h.tail_check);
    store_le64(hd + 72, xxh3_64(out.data() + kHeaderSize, body, 0));
    store_format::put32(hd + 80, store_format::checksum32(hd, 80, 0));
    return out;
}

// Reads a snapshot's header (kHeaderSize bytes at hd); false if it is not one (magic, checksum,
// version).
inline bool decode_header(const unsigned char* hd, SnapshotHeader& h) {
    if (std::memcmp(hd, "CUCKOOIX", 8) != 0 || load_le32(hd + 80) != store_format::checksum32(hd, 80, 0) ||
        load_le32(hd + 8) != kVersion)
        return false;
    h.tag_bits = load_le32(hd + 12);
    h.log_id = load_le64(hd + 16);
    h.log_end = load_le64(hd + 24);
    h.bucket_count = load_le64(hd + 32);
    h.entries = load_le64(hd + 40);
    h.stash = load_le64(hd + 48);
    h.live_bytes = load_le64(hd + 56);
    h.tail_check = load_le64(hd + 64);
    return true;
}
inline bool decode_header(const std::vector<unsigned char>& data, SnapshotHeader& h) {
    return data.size() >= kHeaderSize && decode_header(data.data(), h);
}

// Whether the file is as long as its header says (bucket and stash counts bounded by the file
// first, so that nothing overflows) and its body matches its checksum.
inline bool sizes_match(const std::vector<unsigned char>& data, const SnapshotHeader& h) {
    return h.bucket_count <= data.size() / kBucketBytes && h.stash <= data.size() / kStashEntryBytes &&
           data.size() == kHeaderSize + h.bucket_count * kBucketBytes + h.stash * kStashEntryBytes;
}
inline bool body_intact(const std::vector<unsigned char>& data) {
    return xxh3_64(data.data() + kHeaderSize, data.size() - kHeaderSize, 0) == load_le64(data.data() + 72);
}

// Reads the file at `path` into `data`: first its header, which accept(header bytes, file size)
// must approve (setting `note` when it does not) before the body is read or allocated (a sparse
// 1 TiB file must not be). False, with why in `note`, when there is nothing to use.
template <class Accept>
bool read_file(const std::string& path, std::vector<unsigned char>& data, std::string& note, Accept&& accept) {
    // O_NONBLOCK: a FIFO at the path must not block the open (it is refused below).
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        note = "no snapshot";
        return false;
    }
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < static_cast<off_t>(kHeaderSize)) {
        ::close(fd);
        note = "snapshot too short or not a regular file";
        return false;
    }
    unsigned char hd[kHeaderSize];
    if (::pread(fd, hd, sizeof hd, 0) != static_cast<ssize_t>(sizeof hd) || !accept(static_cast<const unsigned char*>(hd), st.st_size)) {
        ::close(fd);
        return false;
    }
    fault::before_allocation();
    data.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < data.size()) {
        const ssize_t r = ::read(fd, data.data() + done, data.size() - done);
        if (r <= 0) break;
        done += static_cast<size_t>(r);
    }
    ::close(fd);
    if (done != data.size()) {
        note = "snapshot unreadable";
        return false;
    }
    return true;
}

// Writes `bytes` to `path` atomically: to path + ".tmp", made durable, then renamed over `path`.
// The caller makes the rename durable (syncs the directory).
inline void write_file(const std::string& path, const std::vector<unsigned char>& bytes) {
    const std::string tmp = path + ".tmp";
    ::unlink(tmp.c_str());  // a new file, never whatever sits there (a FIFO would block the open)
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) throw_errno("cannot write " + tmp);
    if (!pwrite_all(fd, bytes.data(), bytes.size(), 0)) {
        const int e = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        errno = e;
        throw_errno("cannot write " + tmp);
    }
    ::fsync(fd);  // (a snapshot lost to a crash is only a cache: its checksums refuse it)
    ::close(fd);
    if (::rename(tmp.c_str(), path.c_str()) != 0) throw_errno("cannot write " + path);
}

}  // namespace store_snapshot
}  // namespace cuckoo
