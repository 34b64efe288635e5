// The dedup pipeline's ordered run (cuckoo/dedup.hpp has the whole picture): reading blocks,
// the producer threads that split and hash them, the calling thread that applies them in input
// order, and the writer thread that writes the kept lines.
#pragma once

#if !defined(_WIN32)

#include <type_traits>

#include "cuckoo/dedup/block.hpp"

namespace cuckoo {
namespace dedup {

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
    // Bytes written so far to the output (side 1) or the dropped records' fd (side 2).
    uint64_t bytes_written(int side) const noexcept { return written_[side == 1 ? 0 : 1]; }
    // Bytes read so far from each input's fd (its prefix not counted).
    const std::vector<uint64_t>& bytes_read_from_fds() const noexcept { return read_from_fd_; }

    // Runs to the end of the input (or a stop): for each block in order, apply(block) fills
    // block.keep[0, k) and returns k (k < lines: the key k found no room, stop after it);
    // write_block(block, k) then writes the kept lines; commit() (or commit(block, k)) runs after
    // they were written.
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
        if (!tick_clock_given_) last_tick_ = std::chrono::steady_clock::now();
        size_t line_input = SIZE_MAX;  // the input of the last block applied
        uint64_t next_line = 0;        // the line its next record starts on
        for (uint64_t seq = 0;; ++seq) {
            std::unique_ptr<Block> b = producers ? next_ready(seq, r) : produce_inline(r);
            if (b->error) std::rethrow_exception(b->error);
            if (b->end) break;
            const size_t n = b->lines();
            const size_t k = apply(*b, n);
            r.lines += k;
            if (b->write_from < k) r.kept += b->kept_in(b->write_from, std::min(b->write_to, k));
            r.bytes += k == n ? b->used - (b->virtual_nl ? 1 : 0) : (k ? b->line_end[k - 1] : 0);
            const bool stop_after = k < n || b->too_long || b->bad;
            if (b->input != line_input) {
                line_input = b->input;
                next_line = inputs_[line_input].first_line;
            }
            if (k < n) {
                r.status = Status::full;
            } else if (b->too_long) {
                r.status = Status::key_too_long;
            } else if (b->bad) {
                r.status = Status::bad_record;
                r.bad_input = b->input;
                r.bad_line = next_line + b->newlines;
                r.bad_why = b->stop.why;
                r.message = b->stop.message;
            }
            next_line += b->newlines;
            if (has_writer_) {
                hand_to_writer(std::move(b), k, r);
            } else {
                write_block(*b, k, [&](bool now) {
                    if (now) last_tick_ = {};  // after EINTR: a signal arrived, check it now
                    maybe_tick(r);
                });
                // (commit(block, k) when it takes them: the run journal records where the block
                // left the input, run_journal.hpp)
                if constexpr (std::is_invocable_v<Commit&, const Block&, size_t>) commit(*b, k);
                else commit();
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

    // A run that follows another (the exact path's passes over the input): its ticks go on from
    // the last one of the run before, so that passes shorter than opt.tick_every still tick
    // (signals, progress) while the whole run takes longer. Set before run().
    void continue_ticks_from(std::chrono::steady_clock::time_point last) noexcept {
        last_tick_ = last;
        tick_clock_given_ = true;
    }
    std::chrono::steady_clock::time_point last_tick() const noexcept { return last_tick_; }

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
        b.virtual_nl = b.too_long = b.bad = b.end = false;
        b.error = nullptr;
        b.write_from = 0;
        b.write_to = SIZE_MAX;
        b.use_formatted = false;
        b.listed_ends = Block::kEndsNotListed;
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
            // Where the records of d end so far (lines: at the last '\n'; CSV: at the last '\n'
            // outside quotes), scanned once over the bytes as they come. A CSV scan lists every
            // record end in b.line_end on the way (all of them up to the block's end: the block
            // ends at the last one), for split_records.
            CsvCut cut;
            const bool list_ends = opt_.framing.quoted();
            const auto record_end = [&] {
                if (!list_ends) return record_end_before(opt_.framing, d.p.get(), d.size, cut);
                reserve_line_ends(b, d.size, cut.end_count);
                return record_end_before(opt_.framing, d.p.get(), d.size, cut, b.line_end.get());
            };
            // The whole records of d make the block; the rest waits in carry_.
            const auto take_records_to = [&](size_t used) {
                carry_.append(d.p.get() + used, d.size - used);
                d.size = used;
                b.used = used;
                b.input = src_;
                b.last_input = src_ + 1 == inputs_.size();
                if (list_ends) b.listed_ends = cut.end_count;
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
                        if (const size_t used = record_end()) {
                            take_records_to(used);
                            return true;
                        }
                    }
                    if (give_way()) {
                        carry_.append(d.p.get(), d.size);  // (carry_ was emptied into d above)
                        d.size = 0;
                        return false;
                    }
                }
                if (eof) break;
                if (const size_t used = record_end()) {
                    take_records_to(used);
                    return true;
                }
                // A line longer than the block: read on until its end (refused early when its
                // key already passes max_key: +1 for a '\r' that would not be part of it; a
                // keyed record's key is only part of it, known once it is whole).
                if (!opt_.framing.keyed() && d.size > opt_.max_key + 1 && opt_.max_key != ~uint64_t(0)) {
                    b.too_long = true;
                    b.used = 0;
                    return true;
                }
                target = d.size + opt_.block;
            }
            // End of this input: its last line may lack its '\n'.
            b.input = src_;
            b.last_input = src_ + 1 == inputs_.size();
            ++src_;
            prefix_taken_ = false;
            if (d.size == 0) continue;
            if (d.p[d.size - 1] != opt_.framing.record_end) {
                d.p[d.size++] = opt_.framing.record_end;  // reserved above
                b.virtual_nl = true;
            }
            b.used = d.size;
            if (list_ends) {  // the ends up to the input's end, its virtual '\n' included
                record_end();
                b.listed_ends = cut.end_count;
            }
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
        if (!b->end) split_and_hash(*b, hasher_, opt_);
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
        size_t n;
        {
            std::lock_guard<std::mutex> g(queue_mutex_);
            b = block_to_warm();
            if (!b) return;
            warmed_up_to_ = b->seq + 1;
            n = b->lines();  // (read here: once taken, finish_records may cut a keyed block)
        }
        warm_next_block_(b->hashes.data(), n);
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
                if (input_done_ || reading_stopped_.load(std::memory_order_relaxed)) {
                    input_done_ = true;
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
                    split_block(*b, opt_);
                    size_blocks_from(*b);
                    if (b->bad || b->too_long) {  // nothing after it is applied: read no further
                        std::lock_guard<std::mutex> rg(read_mutex_);
                        input_done_ = true;
                    }
                    split = true;
                    // (A keyed block learns that a record stops it only once its batches are
                    // framed: the calling thread then says so through reading_stopped_.)
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
                    finish_records(*b);
                    // Nothing after a record that stops the run is applied: the producers read
                    // no further (they may have read a few blocks ahead, which are dropped).
                    if (b->bad || b->too_long || b->error) reading_stopped_.store(true, std::memory_order_relaxed);
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

    // Writes lines [b.write_from, k) whose keep flag equals `kept`, in order (gather_lines: one
    // copy into out_), with as few write() calls as the fd takes. `final`: the block ends the input
    // with a virtual '\n', which is not written. The output side of a block whose apply() made
    // its own bytes (Block::use_formatted) writes those.
    template <class Wait>
    void gather_and_write(const Block& b, size_t k, bool kept, bool final, int fd, int side, Wait&& wait,
                          size_t chunk) {
        if (kept && b.use_formatted) {  // (apply() decided every line of the block: k is write_to)
            const size_t from = b.write_from;
            const size_t n = b.formatted.size - (final && k > from && b.keep[k - 1] && b.formatted.size ? 1 : 0);
            return write_all(fd, b.formatted.p.get(), n, side, wait, chunk);
        }
        gather_lines(b, k, kept, final, out_);
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
            written_[side == 1 ? 0 : 1] += static_cast<uint64_t>(w);
        }
    }
    std::vector<Input> inputs_;
    int out_fd_, dropped_fd_;
    KeyHasher hasher_;
    Options opt_;
    Tick tick_;
    std::chrono::steady_clock::time_point last_tick_;
    bool tick_clock_given_ = false;  // continue_ticks_from() set last_tick_
    Bytes out_;
    uint64_t written_[2] = {0, 0};  // bytes_written() (the thread that writes)
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
    std::atomic<bool> reading_stopped_{false};  // a block taken stops the run: read no more
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

}  // namespace dedup
}  // namespace cuckoo

#endif  // !defined(_WIN32)
