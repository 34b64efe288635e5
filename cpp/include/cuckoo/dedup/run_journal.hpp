// The run journal of `cuckoo dedup --store STORE -o FILE`: exactly-once reruns.
//
// A --store run records a block's keys in the store only after the block's records were written
// (each block is one store batch, committed after its write: with_store in tables.hpp). That alone
// is at-least-once: a run stopped between a write and its commit wrote records that a rerun
// writes again, and a rerun that truncates its output loses what the stopped run wrote and
// committed. The journal makes the rerun exact: with each commit it records, in a file beside the
// store (STORE.run), where the run stands after it:
//   - the store log's end (every record after it is from a block whose commit is not recorded),
//   - how many bytes each output held (the output and the dropped records),
//   - which input the next record comes from, its byte offset and line number there.
// A rerun of the same run (the same inputs, outputs, framing and store: `run_id`, the caller's
// digest of them) cuts the store's log, the output and the dropped file back to the last point,
// starts each input where it stood, and goes on: its files are then byte for byte those of one
// run that was never stopped (SIGKILL, SIGINT, a full disk: whatever stopped it between two
// points). The Python side (cuckoo/_dedup/resume.py) decides whether a run resumes.
//
// Order: a block's records are written, then its point is recorded (with the store log's end
// that its commit makes), then its store batch commits. So the newer point's log end is past
// the log's end exactly when its commit did not complete (a crash, a failed write: the batch is
// rolled back or cut short); the rerun then takes the older point, that of the block before,
// whose commit did complete. The other slot always holds that older point.
//
// File layout: two slots of 128 bytes, little-endian; a point goes to slot (sequence % 2), so a
// write torn by a crash leaves the other slot, one point older, intact. A slot:
//     0  magic "CUCKOORJ"      8  u32 version (1)       12  u32 flags (bit 0: the run is done)
//     16 u64 run id            24  u64 sequence (the newer slot has the larger one)
//     32 u64 store log id      40  u64 store log end
//     48 u64 output bytes      56  u64 dropped bytes
//     64 u64 input             72  u64 its byte offset (after a CSV header)
//     80 u64 its line number   88  u64 records read      96  u64 records kept
//     104 u32 checksum of bytes [0, 104) (XXH3-64, low 32 bits, seed 0)    108..128 zero
// A point is written with one pwrite and not synced: it orders with the store's own writes in
// the page cache (a process killed at any moment), as the store's unsynced records do; after a
// power loss the store's recovery may drop records the journal counts, and the rerun then
// refuses to resume (the log ends before the point) rather than guess.
#pragma once

#if !defined(_WIN32)

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include <vector>

#include "cuckoo/dedup/block.hpp"
#include "cuckoo/hash.hpp"
#include "cuckoo/store.hpp"
#include "cuckoo/store_log.hpp"  // pwrite_all, throw_errno, store_format (the log header's fields)

namespace cuckoo {
namespace dedup {

struct RunPoint {
    uint64_t run_id = 0;
    uint64_t sequence = 0;
    uint64_t store_log_id = 0;
    uint64_t store_end = 0;
    uint64_t out_bytes = 0;
    uint64_t dropped_bytes = 0;
    uint64_t input = 0;
    uint64_t input_offset = 0;
    uint64_t input_line = 1;
    uint64_t records = 0;
    uint64_t kept = 0;
    bool done = false;
};

namespace run_journal {
constexpr char kMagic[8] = {'C', 'U', 'C', 'K', 'O', 'O', 'R', 'J'};
constexpr uint32_t kVersion = 1;
constexpr size_t kSlot = 128;
constexpr size_t kChecked = 104;

inline void encode(const RunPoint& p, unsigned char* s) {
    std::memset(s, 0, kSlot);
    std::memcpy(s, kMagic, 8);
    store_format::put32(s + 8, kVersion);
    store_format::put32(s + 12, p.done ? 1u : 0u);
    const uint64_t fields[11] = {p.run_id, p.sequence, p.store_log_id, p.store_end, p.out_bytes, p.dropped_bytes,
                                 p.input, p.input_offset, p.input_line, p.records, p.kept};
    for (size_t i = 0; i < 11; ++i) store_le64(s + 16 + 8 * i, fields[i]);
    store_format::put32(s + kChecked, store_format::checksum32(s, kChecked, 0));
}

inline bool decode(const unsigned char* s, RunPoint& p) {
    if (std::memcmp(s, kMagic, 8) != 0 || load_le32(s + 8) != kVersion) return false;
    if (load_le32(s + kChecked) != store_format::checksum32(s, kChecked, 0)) return false;
    const uint32_t flags = load_le32(s + 12);
    if (flags > 1) return false;
    uint64_t f[11];
    for (size_t i = 0; i < 11; ++i) f[i] = load_le64(s + 16 + 8 * i);
    p = RunPoint{f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], flags == 1};
    return true;
}
}  // namespace run_journal

// The valid points of the journal open at fd, newer first (none: a new or unreadable journal, the
// caller starts a new run).
inline std::vector<RunPoint> read_run_points(int fd) {
    unsigned char buf[2 * run_journal::kSlot];
    size_t got = 0;
    while (got < sizeof buf) {
        const ssize_t r = ::pread(fd, buf + got, sizeof buf - got, static_cast<off_t>(got));
        if (r < 0) {
            if (errno == EINTR) continue;
            throw_errno("cannot read the store's run journal");
        }
        if (r == 0) break;
        got += static_cast<size_t>(r);
    }
    std::vector<RunPoint> points;
    for (size_t slot = 0; slot < 2; ++slot) {
        if (got < (slot + 1) * run_journal::kSlot) break;
        RunPoint p;
        if (run_journal::decode(buf + slot * run_journal::kSlot, p)) points.push_back(p);
    }
    if (points.size() == 2 && points[1].sequence > points[0].sequence) std::swap(points[0], points[1]);
    return points;
}

// Writes `p` to its slot (p.sequence % 2). Throws std::system_error when the write fails (the
// run then stops: its last recorded point is the one before).
inline void write_run_point(int fd, const RunPoint& p) {
    unsigned char slot[run_journal::kSlot];
    run_journal::encode(p, slot);
    if (!pwrite_all(fd, slot, sizeof slot, (p.sequence % 2) * run_journal::kSlot))
        throw_errno("cannot write the store's run journal");
}

// The journal of one run (with_store): its point moves on with each block committed.
class RunJournal {
public:
    // `start`: the point the run starts from (a new run's: its inputs' beginning, the outputs
    // empty or holding a CSV header; a resumed run's: the point it resumes); `inputs`: the
    // pipeline's, for where each starts (Input::first_byte, first_line).
    // Where an output stands, for a point: side 1 the output, 2 the dropped records' file;
    // `written` the bytes the pipeline wrote to its fd; `last`: the run's last point. Default:
    // the fd's offset (a file the pipeline writes itself); a compressed file written through a
    // pipe ends a member there and gives the file's size (cuckoo/_dedup/compress.py,
    // CompressingWriter.end_member; at the last point a file that got nothing still gets one
    // empty member, so that it is a valid compressed file of the size recorded).
    using Position = std::function<uint64_t(int side, uint64_t written, bool last)>;

    RunJournal(int fd, const RunPoint& start, const std::vector<Input>& inputs, int out_fd, int dropped_fd,
               Position position = nullptr)
        : fd_(fd), point_(start), out_fd_(out_fd), dropped_fd_(dropped_fd), position_(std::move(position)) {
        for (const Input& in : inputs) {
            first_byte_.push_back(in.first_byte);
            first_line_.push_back(in.first_line);
        }
    }

    // Before the first block: records the start point, with the store's log end and the
    // outputs' sizes as they are now (a CSV header written), so that a run stopped before its
    // first commit resumes from its beginning.
    void begin(const Store& s) { record(s, 0, 0, false); }

    // Before the store commits the keys of block b's first k records (whose writes were handed
    // to the OS): records the point after them, with the log's end after the commit (the batch's
    // records are counted in it already, held in memory).
    // `out_written`, `dropped_written`: the pipeline's Pipeline::bytes_written.
    void committing(const Store& s, const Block& b, size_t k, uint64_t out_written, uint64_t dropped_written) {
        if (b.input != point_.input) {
            point_.input = b.input;
            point_.input_offset = first_byte_.at(b.input);
            point_.input_line = first_line_.at(b.input);
        }
        const size_t n = b.lines();
        const uint64_t consumed = k == n ? b.used - (b.virtual_nl ? 1 : 0) : (k ? b.line_end[k - 1] : 0);
        uint64_t lines = b.newlines;
        if (k < n) {  // (a run that stops inside this block: the '\n's of its records before the stop)
            lines = 0;
            for (const unsigned char *p = b.data.p.get(), *e = p + consumed; p < e; ++lines) {
                p = static_cast<const unsigned char*>(std::memchr(p, '\n', static_cast<size_t>(e - p)));
                if (!p) break;
                ++p;
            }
        }
        point_.input_offset += consumed;
        point_.input_line += lines;
        point_.records += k;
        point_.kept += b.kept_in(0, k);
        record(s, out_written, dropped_written, false);
    }

    // After the last block of a run that read all of its input: the run is done (a rerun of it
    // has nothing left to do).
    void finish(const Store& s, uint64_t out_written, uint64_t dropped_written) {
        point_.done = true;
        record(s, out_written, dropped_written, true);
    }

private:
    void record(const Store& s, uint64_t out_written, uint64_t dropped_written, bool last) {
        point_.store_log_id = s.header().log_id;
        point_.store_end = s.stats().log_bytes;
        point_.out_bytes = position(1, out_fd_, out_written, last);
        point_.dropped_bytes = position(2, dropped_fd_, dropped_written, last);
        ++point_.sequence;
        write_run_point(fd_, point_);
    }

    uint64_t position(int side, int fd, uint64_t written, bool last) const {
        if (fd < 0) return 0;
        if (position_) return position_(side, written, last);
        const off_t at = ::lseek(fd, 0, SEEK_CUR);
        if (at < 0)
            throw_errno(std::string("cannot tell the size of the ") + (side == 1 ? "output" : "dropped records' file") +
                        " for the run journal");
        return static_cast<uint64_t>(at);
    }

    int fd_;
    RunPoint point_;
    int out_fd_, dropped_fd_;
    Position position_;
    std::vector<uint64_t> first_byte_, first_line_;
};

// Cuts the store log at `path` back to `end` for a resumed run, under the log's writer lock (the
// flock a writable Store takes: a store open for writing elsewhere makes this fail). Refuses
// (std::runtime_error, saying why) unless the log is the one the point was taken from (`log_id`),
// `end` is a record boundary no earlier than the log's synced end (synced records are never cut:
// a log synced past the point was written by another run since) and no later than the file's end.
// Returns the bytes cut.
inline uint64_t cut_store_log(const std::string& path, uint64_t log_id, uint64_t end) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) throw_errno("cannot open the store '" + path + "'");
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }  // (releases the flock)
    } closer{fd};
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK) throw std::runtime_error("the store '" + path + "' is open for writing elsewhere");
        throw_errno("cannot lock the store '" + path + "'");
    }
    unsigned char h[store_format::kHeaderSize];
    size_t got = 0;
    while (got < sizeof h) {
        const ssize_t r = ::pread(fd, h + got, sizeof h - got, static_cast<off_t>(got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) throw std::runtime_error("the store's log has no complete header");
        got += static_cast<size_t>(r);
    }
    if (std::memcmp(h, store_format::kLogMagic, 8) != 0 || load_le32(h + 44) != store_format::checksum32(h, 44, 0))
        throw std::runtime_error("the store's log header is not valid");
    if (load_le64(h + 32) != log_id) throw std::runtime_error("the store's log is another one (compacted or replaced)");
    const uint64_t synced = load_le32(h + 56) == store_format::checksum32(h + 48, 8, 0) ? load_le64(h + 48) : 0;
    struct stat st;
    if (::fstat(fd, &st) != 0) throw_errno("cannot stat the store '" + path + "'");
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    if (end < store_format::kHeaderSize || end % store_format::kAlign != 0)
        throw std::runtime_error("the journal's log end is not a record boundary");
    if (end > size) throw std::runtime_error("the store's log ends before the run's last commit (it lost records)");
    if (end < synced) throw std::runtime_error("the store was written and synced by another run since");
    if (end == size) return 0;
    if (::ftruncate(fd, static_cast<off_t>(end)) != 0) throw_errno("cannot cut the store's log");
    return size - end;
}

}  // namespace dedup
}  // namespace cuckoo

#endif  // !defined(_WIN32)
