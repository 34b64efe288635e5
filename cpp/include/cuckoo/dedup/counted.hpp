// Dedup that needs each key's count over the whole input (cuckoo/dedup.hpp has the whole
// picture): `--count` (each written record with the number of records of its key), `--repeated`
// and `--unique-only` (only keys seen more than once, or exactly once), `--keep last` (a key's
// last record instead of its first). Exact, over input that can be read again (regular files; the
// caller copies a pipe or decompressed input to a temporary file first).
//
// Two passes over a range of the hash space, on the exact path's in-memory key set
// (cuckoo/key_set.hpp) with 8 value bytes a key (its count; its top bit: the second pass has
// seen the key) or, keep last, 16 (its count, then how many of its records the second pass has
// seen):
//   1. counting: every record of the range adds one to its key's count;
//   2. deciding: a record is written when it is its key's first (or, keep last, its last) and the
//      count passes the selection.
// Keep first, one range (the keys fit): the counting pass also notes which records added their
// keys (a bit a record); the deciding pass then takes each such record's count from its lane's
// arena in order (the order the keys were added in) and looks nothing up. Measured (AMD EPYC, 2
// vCPUs, quiet, 10^7 hex lines, 4.3*10^6 distinct, 3 alternating runs): -c 1.33-1.93 -> 0.89-1.04
// s, -u 0.96-1.24 -> 0.63-0.70 s (--exact 0.71-0.86 s), the same output.
// When the set passes its memory budget in the counting pass, the range splits in halves as the
// exact path's does (exact.hpp): the set keeps the lower half and goes on, and the upper half waits
// for passes of its own, from the first record (a count needs the whole input). So a run whose keys
// fit reads its input twice, streaming its output in the second pass. A run of several ranges
// cannot write in input order until every range has decided: each range's deciding pass records
// one bit a record (kept or not) and, with --count, the counts of its kept records in input order
// in a temporary file; a last pass writes every record from them. Memory: the set (at most about
// the budget), a bit a record, and a file buffer a range.
#pragma once

#if !defined(_WIN32)

#include <stdio.h>

#include <string>

#include "cuckoo/dedup/exact.hpp"

namespace cuckoo {
namespace dedup {

struct CountOptions {
    bool keep_last = false;  // a key's last record, else its first
    // The counts whose records are written: [min_count, max_count] (-d: 2.., -u: 1..1).
    uint64_t min_count = 1, max_count = ~uint64_t(0);
    bool write_counts = false;  // --count: each written record with its key's count
    // --count on JSONL: the member added to each object, as JSON text with its colon (`"count":`).
    std::string json_member = "\"count\":";
};

struct CountedRun {
    unsigned passes = 0;
    uint64_t ranges = 0;          // hash ranges counted (1: the keys fitted the budget)
    uint64_t distinct = 0;        // distinct keys over all ranges
    uint64_t peak_set_bytes = 0;  // the most memory the key set held
};

// Appends record j of block b to out with its key's count, as --count writes it: lines as `uniq -c`
// does ("%7llu " before the line), separated fields and CSV with one more field before the line
// end (the framing's delimiter, then the count), a JSON object with one more member before its
// closing brace. The record's end ('\n', "\r\n", NUL) stays where it was.
inline void append_counted(Bytes& out, const Block& b, size_t j, uint64_t count, const Framing& f,
                           const std::string& json_member) {
    const unsigned char* p = b.data.p.get();
    const size_t start = j ? static_cast<size_t>(b.line_end[j - 1]) : 0, end = static_cast<size_t>(b.line_end[j]);
    char digits[24];
    if (f.kind == FramingKind::lines) {
        const int len = std::snprintf(digits, sizeof digits, "%7llu ", static_cast<unsigned long long>(count));
        out.append(reinterpret_cast<const unsigned char*>(digits), static_cast<size_t>(len));
        out.append(p + start, end - start);
        return;
    }
    const int len = std::snprintf(digits, sizeof digits, "%llu", static_cast<unsigned long long>(count));
    size_t body = end - 1;  // (before the record's '\n')
    if (body > start && p[body - 1] == '\r') --body;
    size_t at = body;  // where the count goes in
    std::string insert;
    if (f.kind == FramingKind::jsonl) {
        // The framing validated the record: an object, maybe with blanks around it.
        while (at > start && (p[at - 1] == ' ' || p[at - 1] == '\t' || p[at - 1] == '\r')) --at;
        if (at == start || p[at - 1] != '}') throw std::logic_error("a keyed JSONL record is not an object");
        --at;
        size_t before = at;
        while (before > start && (p[before - 1] == ' ' || p[before - 1] == '\t' || p[before - 1] == '\n' ||
                                  p[before - 1] == '\r'))
            --before;
        if (before == start || p[before - 1] != '{') insert += ',';
        insert += json_member;
    } else {
        insert += static_cast<char>(f.fields.delimiter);
    }
    insert.append(digits, static_cast<size_t>(len));
    out.append(p + start, at - start);
    out.append(reinterpret_cast<const unsigned char*>(insert.data()), insert.size());
    out.append(p + at, end - at);
}

// Keep first: the count's top bit, set once the deciding pass has seen the key (a count never
// reaches 2^63).
constexpr uint64_t kSeenBit = uint64_t(1) << 63;
inline uint64_t load_u64(const unsigned char* v) noexcept {
    uint64_t x;
    std::memcpy(&x, v, 8);
    return x;
}
inline void store_u64(unsigned char* v, uint64_t x) noexcept { std::memcpy(v, &x, 8); }

inline Result with_counts(const std::vector<Input>& inputs, const std::vector<int64_t>& starts, int out_fd,
                          int dropped_fd, const KeyHasher& hasher, const Options& opt, const CountOptions& how,
                          uint64_t budget, uint64_t expected_keys, Pipeline::Tick tick, CountedRun* info = nullptr,
                          double mean_key_bytes = 0) {
    if (starts.size() != inputs.size()) throw std::invalid_argument("with_counts: one start offset per input");
    // A key's value: its count (keep first: its top bit set once the deciding pass has seen the
    // key's first record), then, keep last, how many of its records the deciding pass has seen.
    // (Keep first in 8 bytes, not 16: 34 MB less for 4.3*10^6 keys.)
    const unsigned kValueBytes = how.keep_last ? 16 : 8;
    CountedRun run;
    std::vector<Input> pass_inputs = inputs;  // (after the first pass: limited to what it read)
    const double key_bytes = (mean_key_bytes > 0 ? KeySet::expected_bytes(1.0, mean_key_bytes) : 40.0) + kValueBytes;
    const uint64_t planned =
        mean_key_bytes > 0 ? planned_parts(expected_keys, mean_key_bytes + kValueBytes, budget) : 1;
    // Two lanes with two threads, as on the exact path: each a key set of its own for half of the
    // range, filled by the calling thread and a helper at once (a key is in one lane only, so their
    // decisions do not depend on each other). After a split the range is the lower lane's: the
    // upper lane holds nothing until the next range.
    const unsigned lanes = opt.threads >= 2 ? 2 : 1;
    struct Lane {
        HashRange range;
        std::unique_ptr<KeySet> set;
        std::vector<uint32_t> picked;  // its records of the block in hand (m of them)
        uint32_t m = 0;
    };
    std::vector<Lane> lane(lanes);
    for (Lane& l : lane) {
        fault::before_allocation();
        l.set.reset(new KeySet(
            hasher, std::min<uint64_t>(expected_keys / planned, static_cast<uint64_t>(budget / key_bytes)) / lanes,
            kValueBytes));
    }
    std::unique_ptr<HelperThread> helper;
    if (lanes > 1) {
        fault::before_allocation();
        helper.reset(new HelperThread());
    }
    auto both = [&](auto&& job) {  // job(lane) for each lane, the second on the helper thread
        on_both_threads(lanes > 1 && lane[1].m ? helper.get() : nullptr, [&] { job(lane[0]); },
                        [&] { job(lane[1]); });
    };
    auto set_bytes = [&] {
        uint64_t b = 0;
        for (const Lane& l : lane) b += l.set->memory_bytes();
        return b;
    };
    std::vector<HashRange> waiting;
    for (uint64_t k = 0; k < planned; ++k) waiting.push_back(HashRange{}.piece(k, planned, 0));
    // The ranges decided (several: a bit a record and a file of counts each, for the last pass).
    struct Decided {
        HashRange range;
        std::unique_ptr<FILE, int (*)(FILE*)> counts{nullptr, &fclose};
    };
    std::vector<Decided> decided;
    std::vector<uint64_t> kept_bits;  // bit k: record k written (ranges decided ahead of the last pass)
    std::vector<unsigned char> mine;  // a block's records: 1 when the range being decided holds it
    std::vector<uint64_t> count_of;   // a block's records' counts (those written)
    // Keep first, in the first range's counting pass: bit k set when record k added its key (its
    // key's first record), and the block's records' flags, a byte each (the two lanes set their
    // own records' at once). When that range turns out to be the only one, the deciding pass
    // needs no lookup: the records with the bit set are the candidates, and their keys' counts
    // come in the same order from each lane's arena (KeySet::ValueCursor).
    const bool by_first = !how.keep_last;
    std::vector<uint64_t> first_bits;
    std::vector<unsigned char> first_in_block;
    Result total, read_before;
    uint64_t first_digest = 0;
    bool first = true;
    auto last_tick = std::chrono::steady_clock::now();
    // One pass over the input; apply(b, n, base) decides the block's records (base: the first one's
    // number). Checks that every pass after the first reads the records the first one read.
    auto pass = [&](int to_out, int to_dropped, auto&& apply) {
        if (!first) rewind_inputs(inputs, starts);
        ++run.passes;
        const Pipeline::Tick pass_tick = ticks_after(tick, read_before);
        Pipeline p(pass_inputs, to_out, to_dropped, hasher, opt, pass_tick);
        p.continue_ticks_from(last_tick);
        uint64_t base = 0, digest = 0;
        Result r = p.run(
            [&](Block& b, size_t n) -> size_t {
                if (!first && base + n > total.lines)
                    throw InputChanged("the input changed while it was read again (more lines)");
                const uint64_t* const h = b.hashes.data();
                for (size_t j = 0; j < n; ++j) digest += h[j] * (2 * (base + j) + 1);
                apply(b, n, base);
                base += n;
                return n;
            },
            [] {}, /*write_behind=*/true);
        last_tick = p.last_tick();
        if (!first && (r.lines != total.lines || r.bytes != total.bytes || digest != first_digest))
            throw InputChanged("the input changed while it was read again (fewer or other lines)");
        if (first) {
            total = r;
            total.kept = 0;
            first_digest = digest;
            for (size_t i = 0; i < pass_inputs.size(); ++i) pass_inputs[i].limit = p.bytes_read_from_fds()[i];
            first = false;
        }
        read_before.lines += r.lines;
        read_before.bytes += r.bytes;
        return r;
    };
    // Each lane's records of the block (picked), and mine[j] for those of the range.
    auto pick = [&](const Block& b, size_t n) {
        for (Lane& l : lane) {
            if (l.picked.size() < n + 1) {  // (+ 1: the write past the end below)
                fault::before_allocation();
                l.picked.resize(n + 1);
            }
            l.m = 0;
        }
        if (mine.size() < n) {
            fault::before_allocation();
            mine.resize(n);
        }
        for (size_t j = 0; j < n; ++j) {  // (no branch a record: which lane is a coin toss)
            const uint64_t pos = range_position(b.hashes[j]);
            unsigned char any = 0;
            for (Lane& l : lane) {
                const bool in = l.range.holds(pos);
                l.picked[l.m] = static_cast<uint32_t>(j);
                l.m += in;
                any |= in;
            }
            mine[j] = any;
        }
    };
    // The deciding pass's verdict on a record of the range, its key's value updated, its count
    // kept for the writing. (Every key of the range was counted: one missing means the input
    // changed between the passes.)
    auto decide = [&](Block& b) {
        return [&](Lane& l) {
            l.set->find_values(l.m, l.picked.data(), [&b](uint32_t j) { return b.key(j); }, b.hashes.data(),
                               [&](uint32_t j, unsigned char* v) {
                                   if (!v) throw InputChanged("the input changed while it was read again (other lines)");
                                   const uint64_t raw = load_u64(v), count = raw & ~kSeenBit;
                                   bool chosen;
                                   if (how.keep_last) {
                                       const uint64_t seen = load_u64(v + 8) + 1;
                                       store_u64(v + 8, seen);
                                       chosen = seen == count;
                                   } else {
                                       chosen = !(raw & kSeenBit);
                                       store_u64(v, raw | kSeenBit);
                                   }
                                   b.keep[j] = chosen && how.min_count <= count && count <= how.max_count;
                                   count_of[j] = count;
                               });
        };
    };
    auto size_counts = [&](size_t n) {
        if (count_of.size() < n) {
            fault::before_allocation();
            count_of.resize(n);
        }
    };
    auto no_output = [](Block& b) { b.write_from = b.write_to = 0; };
    while (!waiting.empty()) {
        HashRange range = waiting.front();
        waiting.erase(waiting.begin());
        for (unsigned a = 0; a < lanes; ++a) {
            lane[a].range = range.piece(a, lanes, 0);
            lane[a].set->clear();
        }
        ++run.ranges;
        // 1. counting
        // (Only while the range may stay the only one: the whole hash space, nothing waiting.)
        const bool note_firsts = by_first && run.ranges == 1 && waiting.empty();
        pass(-1, -1, [&](Block& b, size_t n, uint64_t base) {
            no_output(b);
            pick(b, n);
            if (note_firsts && first_in_block.size() < n) {
                fault::before_allocation();
                first_in_block.resize(n);
            }
            unsigned char* const firsts = first_in_block.data();
            if (note_firsts) std::fill(firsts, firsts + n, static_cast<unsigned char>(0));
            both([&](Lane& l) {
                l.set->add_values(l.m, l.picked.data(), [&b](uint32_t j) { return b.key(j); }, b.hashes.data(),
                                  [firsts, note_firsts](uint32_t j, unsigned char* v, bool is_new) {
                                      store_u64(v, load_u64(v) + 1);
                                      if (note_firsts) firsts[j] = is_new;
                                  });
            });
            if (note_firsts) {
                if (first_bits.size() < (base + n + 63) / 64) {
                    fault::before_allocation();
                    first_bits.resize((base + n + 63) / 64);
                }
                for (size_t j = 0; j < n; ++j)
                    first_bits[(base + j) / 64] |= uint64_t(firsts[j] != 0) << ((base + j) % 64);
            }
            const uint64_t bytes = set_bytes();
            run.peak_set_bytes = std::max(run.peak_set_bytes, bytes);
            if (bytes > budget && range.hi - range.lo > 1024) {
                // Over budget: the upper half waits for passes of its own (a count needs every
                // record); each lane keeps what it holds of the lower half.
                waiting.push_back(range.piece(1, 2, 0));
                range = range.piece(0, 2, 0);
                for (Lane& l : lane) {
                    l.range = HashRange{std::max(l.range.lo, range.lo), std::min(l.range.hi, range.hi), 0};
                    if (l.range.lo > l.range.hi) {
                        l.set->clear();
                    } else {
                        const HashRange kept = l.range;
                        l.set->retain([&](uint64_t hk) { return kept.holds(range_position(hk)); });
                    }
                }
            }
        });
        for (const Lane& l : lane) run.distinct += l.set->size();
        const bool alone = waiting.empty() && decided.empty();
        // 2. deciding: written now when this range is the only one, else recorded for the last pass.
        if (alone && by_first) {
            // A record is a candidate when it added its key (its bit); its key's count is the
            // next value of its lane's arena. No lookup: the counting pass's order is the arena's.
            std::vector<KeySet::ValueCursor> next_value;
            fault::before_allocation();
            next_value.reserve(lanes);
            for (const Lane& l : lane) next_value.push_back(l.set->values_in_order());
            const Result r = pass(out_fd, dropped_fd, [&](Block& b, size_t n, uint64_t base) {
                b.formatted.size = 0;
                b.use_formatted = how.write_counts;
                for (size_t j = 0; j < n; ++j) {
                    const uint64_t line = base + j;
                    if (line / 64 >= first_bits.size() || !((first_bits[line / 64] >> (line % 64)) & 1)) {
                        b.keep[j] = false;
                        continue;
                    }
                    const size_t l = lanes > 1 && lane[1].range.holds(range_position(b.hashes[j])) ? 1 : 0;
                    const unsigned char* v = next_value[l].next();
                    if (!v) throw InputChanged("the input changed while it was read again (other lines)");
                    const uint64_t count = load_u64(v);
                    b.keep[j] = how.min_count <= count && count <= how.max_count;
                    if (b.keep[j] && how.write_counts)
                        append_counted(b.formatted, b, j, count, opt.framing, how.json_member);
                }
            });
            total.kept = r.kept;
            break;
        }
        if (alone) {
            const Result r = pass(out_fd, dropped_fd, [&](Block& b, size_t n, uint64_t) {
                pick(b, n);
                size_counts(n);
                both(decide(b));
                b.formatted.size = 0;
                b.use_formatted = how.write_counts;
                if (how.write_counts)
                    for (size_t j = 0; j < n; ++j)
                        if (b.keep[j]) append_counted(b.formatted, b, j, count_of[j], opt.framing, how.json_member);
            });
            total.kept = r.kept;
            break;
        }
        Decided d;
        d.range = range;
        if (how.write_counts) {
            d.counts.reset(::tmpfile());
            if (!d.counts) throw IoError(errno, 1, 0, "cannot create a temporary file for the counts");
        }
        if (kept_bits.empty()) {
            fault::before_allocation();
            kept_bits.assign((total.lines + 63) / 64, 0);
        }
        FILE* const counts = d.counts.get();
        pass(-1, -1, [&](Block& b, size_t n, uint64_t base) {
            no_output(b);
            pick(b, n);
            size_counts(n);
            both(decide(b));
            for (size_t j = 0; j < n; ++j) {
                if (!mine[j] || !b.keep[j]) continue;
                const uint64_t line = base + j;
                kept_bits[line / 64] |= uint64_t(1) << (line % 64);
                if (counts && std::fwrite(&count_of[j], 8, 1, counts) != 1)
                    throw IoError(errno ? errno : EIO, 1, 0, "cannot write the counts' temporary file");
            }
        });
        decided.push_back(std::move(d));
    }
    if (!decided.empty()) {
        // 3. the last pass: every record from the ranges' bits (and counts), in input order.
        for (Lane& l : lane) l.set.reset(new KeySet(hasher));  // (the memory back: empty sets)
        std::sort(decided.begin(), decided.end(), [](const Decided& a, const Decided& b) { return a.range.lo < b.range.lo; });
        for (Decided& d : decided)
            if (d.counts) std::rewind(d.counts.get());
        const Result r = pass(out_fd, dropped_fd, [&](Block& b, size_t n, uint64_t base) {
            b.formatted.size = 0;
            b.use_formatted = how.write_counts;
            for (size_t j = 0; j < n; ++j) {
                const uint64_t line = base + j;
                b.keep[j] = (kept_bits[line / 64] >> (line % 64)) & 1;
                if (!how.write_counts || !b.keep[j]) continue;
                const uint64_t pos = range_position(b.hashes[j]);
                auto it = std::upper_bound(decided.begin(), decided.end(), pos,
                                           [](uint64_t x, const Decided& d) { return x < d.range.lo; });
                uint64_t count;
                if (it == decided.begin() || std::fread(&count, 8, 1, std::prev(it)->counts.get()) != 1)
                    throw IoError(EIO, 1, 0, "cannot read the counts' temporary file");
                append_counted(b.formatted, b, j, count, opt.framing, how.json_member);
            }
        });
        total.kept = r.kept;
    }
    if (info) *info = run;
    return total;
}

}  // namespace dedup
}  // namespace cuckoo

#endif  // !defined(_WIN32)
