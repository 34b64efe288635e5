// Filter._dedup: the native dedup pipeline through a filter, and _core._dedup_exact: the exact
// path through an in-memory key set, in passes under a memory budget (cpp/include/cuckoo/dedup.hpp);
// _core._first_occurrences: that key set over key arrays, for cuckoo.dask's exact shards.
// The Python side is cuckoo.cli.engine (cuckoo.dedup()).
#include "dedup_binding.hpp"

#include <mutex>

#include "cuckoo/key_set.hpp"
#include "cuckoo/line_sample.hpp"
#include "filter_binding.hpp"
#include "keys.hpp"

namespace cuckoo_py {

namespace {

// Marks in dst (one flag a key of `batches`, in order) whether each key is new to `set`, and adds
// the new ones: insert_unique over chunks of spans and hashes, without the GIL (the caller
// released it; the batches hold the buffers they read exported). Stops early when interrupted.
void mark_first(cuckoo::KeySet& set, const cuckoo::KeyHasher& hasher, const std::vector<KeyBatch>& batches,
                bool* dst, SignalCheck& stop) {
    constexpr uint64_t kChunk = uint64_t(1) << 16;  // keys hashed at a time (spans, hashes: ~2 MiB)
    static const std::vector<uint32_t> picked = [] {
        std::vector<uint32_t> v(kChunk);
        for (uint32_t j = 0; j < kChunk; ++j) v[j] = j;
        return v;
    }();
    KeySpans c;
    uint64_t pos = 0;
    for (const KeyBatch& b : batches) {
        for (uint64_t start = 0; start < b.size && !stop.interrupted(); start += kChunk) {
            const uint64_t n = std::min(kChunk, b.size - start);
            fill_spans_and_hashes(hasher, b, start, n, c);
            set.insert_unique(static_cast<uint32_t>(n), picked.data(), [&](uint32_t j) { return c.spans[j]; },
                              c.hashes.data(), dst + pos);
            pos += n;
            stop();
        }
    }
}

// cuckoo._core._KeySet: an in-memory exact key set that lives across calls (the Parquet and
// Arrow IPC dedup of cuckoo._dedup.columnar, row group by row group). Keys are compared by their
// bytes (an int by its 8 little-endian bytes), as a Store compares them, with no log behind them.
struct PyKeySet {
    PyKeySet(uint64_t seed, uint64_t expected) : hasher{seed}, set(hasher, expected) {}
    cuckoo::KeyHasher hasher;
    cuckoo::KeySet set;
    std::mutex mutex;  // (one call at a time: the GIL is released while it inserts)
};

}  // namespace

void register_dedup(FilterClass& cls) {
#if defined(_WIN32)
    (void)cls;  // the pipeline reads and writes POSIX file descriptors: the Python path runs instead
#else
    cls.def("_dedup", [](PyFilter& self, const py::list& inputs, int out_fd, int dropped_fd, uint64_t block,
                         unsigned threads, py::object progress, py::object framing) {
        DedupCall c = dedup_call(inputs, out_fd, dropped_fd, block, threads, ~uint64_t(0), std::move(progress), framing);
        WriteLock lock(self);
        std::pair<std::string, const char*> why;
        py::dict d = run_dedup(c, [&](DedupCall& call, cuckoo::dedup::Pipeline::Tick tick) {
            cuckoo::dedup::Result r = cuckoo::dedup::with_filter(self.core, std::move(call.inputs), call.out_fd,
                                                                 call.dropped_fd, call.opt, std::move(tick));
            if (r.status == cuckoo::dedup::Status::full) why = failure_text(self.core);  // under the lock
            return r;
        });
        if (why.second) {
            d["message"] = "filter is full: " + why.first;
            d["reason"] = why.second;
        }
        return d;
    }, py::arg("inputs"), py::arg("out_fd"), py::arg("dropped_fd"), py::arg("block"), py::arg("threads"),
       py::arg("progress"), py::arg("framing") = py::none());
#endif
}

void register_dedup_exact(py::module_& m) {
#if !defined(_WIN32)
    // For cuckoo._dedup.engine: the CSV header at the start of `data` (a UTF-8 BOM before it
    // skipped): (end, fields), end one past the header record's '\n', or (-1, None) when data
    // holds no whole record yet (at_end: data is the whole input, its last record may lack '\n').
    // ValueError for a header that is not valid CSV.
    // For cuckoo._dedup.resume: the run journal of `dedup --store STORE -o FILE` (exactly-once
    // reruns, cuckoo/dedup/run_journal.hpp): its valid points, newer first, and cutting the
    // store's log back to a point before the store is opened.
    m.def("_run_journal_read", [](int fd) {
        std::vector<cuckoo::dedup::RunPoint> points;
        {
            py::gil_scoped_release nogil;
            points = cuckoo::dedup::read_run_points(fd);
        }
        py::list out;
        for (const auto& p : points) out.append(run_point_dict(p));
        return out;
    }, py::arg("fd"));
    m.def("_cut_store_log", [](const std::string& path, uint64_t log_id, uint64_t end) {
        try {
            py::gil_scoped_release nogil;
            return cuckoo::dedup::cut_store_log(path, log_id, end);
        } catch (const std::system_error&) {
            throw;  // (an OSError)
        } catch (const std::runtime_error& e) {
            throw py::value_error(e.what());
        }
    }, py::arg("path"), py::arg("log_id"), py::arg("end"));
    m.def("_csv_header", [](const py::bytes& data, int delimiter, int quote, bool at_end) -> py::tuple {
        const std::string s = data;
        const auto* p = reinterpret_cast<const unsigned char*>(s.data());
        const size_t bom = cuckoo::dedup::bom_length(p, s.size());
        // The first record end (csv_scan gives the last one of what it scanned: it goes on from
        // where it stopped, '\n' by '\n', so this is one pass).
        size_t end = 0;
        {
            cuckoo::dedup::CsvCut first;
            first.searched = bom;
            for (size_t i = bom; i < s.size(); ++i) {
                if (p[i] != '\n') continue;
                cuckoo::dedup::csv_scan(p, i + 1, static_cast<unsigned char>(quote), first,
                                        static_cast<unsigned char>(delimiter));
                if (first.last_end) {
                    end = first.last_end;
                    break;
                }
            }
        }
        if (!end) {
            if (!at_end || s.size() == bom) return py::make_tuple(-1, py::none());
            end = s.size();
        }
        size_t n = end - bom;
        if (n && p[bom + n - 1] == '\n') --n;
        std::vector<std::string> fields;
        std::string error;
        if (cuckoo::dedup::csv_fields(p + bom, n, static_cast<unsigned char>(delimiter), static_cast<unsigned char>(quote),
                                      fields, error) == cuckoo::dedup::KeyStatus::invalid)
            throw py::value_error("the header: " + error);
        py::list names;
        for (const std::string& f : fields) names.append(py::bytes(f));
        return py::make_tuple(static_cast<int64_t>(end), names);
    }, py::arg("data"), py::arg("delimiter"), py::arg("quote"), py::arg("at_end"));
#endif
    // For cuckoo.cli.estimate: the counts (keys, distinct, once, twice, seen) of the lines of
    // sampled windows, each given as (bytes-like, starts the input, ends the input); seen: a tuple
    // of the keys seen exactly k times, k = 1.._SAMPLE_RARE_MAX; then the bytes of the distinct
    // keys and of the keys seen once (each key once).
    m.attr("_SAMPLE_RARE_MAX") = cuckoo::SampleCounts::kRareMax;
    m.def("_sample_counts", [](const py::list& windows) {
        cuckoo::LineSample sample;
        for (const py::handle w : windows) {
            const auto t = w.cast<py::tuple>();
            if (t.size() != 3) throw py::value_error("_sample_counts: each window is (data, whole_start, whole_end)");
            py::buffer_info info = py::reinterpret_borrow<py::buffer>(t[0]).request();
            if (info.ndim != 1 || info.itemsize != 1) throw py::value_error("_sample_counts: a window is bytes");
            sample.add_window(static_cast<const unsigned char*>(info.ptr), static_cast<size_t>(info.size),
                              t[1].cast<bool>(), t[2].cast<bool>());
        }
        const cuckoo::SampleCounts c = sample.counts();
        py::tuple seen(cuckoo::SampleCounts::kRareMax);
        for (unsigned k = 0; k < cuckoo::SampleCounts::kRareMax; ++k) seen[k] = c.seen[k];
        return py::make_tuple(c.keys, c.distinct, c.once, c.twice, seen, c.distinct_bytes, c.once_bytes);
    }, py::arg("windows"));

    // For cuckoo.dask's exact shards: per sequence of keys (the shard's pieces, in partition
    // order), whether each key is the first of its value over all of them, by one in-memory key
    // set (cuckoo/key_set.hpp). A pure function: the set lives for the call only, so a failure
    // leaves nothing behind. Against an anonymous Store (whose keys live in a log file, read back
    // on every tag match) it takes no file and no log reads: 10^7 rows of 5 * 10^6 distinct int
    // keys on a 2-worker Dask cluster took 1.30x Dask's drop_duplicates through the Store and
    // 0.83x through this (benchmarks/dask_dedup.py, Xeon Skylake-SP, 2026-11-26).
    m.def("_first_occurrences", [](const py::list& pieces, uint64_t seed) {
        const cuckoo::KeyHasher hasher{seed};
        std::vector<std::vector<KeyBatch>> batches;
        uint64_t total = 0;
        for (const py::handle piece : pieces) {
            batches.push_back(make_batches(hasher, piece, KeyForm::Bytes));
            total += total_size(batches.back());
        }
        std::vector<py::array_t<bool>> out;
        std::vector<bool*> dst;
        for (const auto& b : batches) {
            out.push_back(new_array<bool>(total_size(b)));
            dst.push_back(out.back().mutable_data());
        }
        SignalCheck stop(1);
        {
            py::gil_scoped_release nogil;  // reads only buffers the batches hold exported
            cuckoo::KeySet set(hasher, total);
            for (size_t i = 0; i < batches.size() && !stop.interrupted(); ++i) mark_first(set, hasher, batches[i], dst[i], stop);
        }
        stop.raise_if_interrupted();
        py::list result;
        for (auto& a : out) result.append(std::move(a));
        return result;
    }, py::arg("pieces"), py::arg("seed"));

    py::class_<PyKeySet>(m, "_KeySet")
        .def(py::init<uint64_t, uint64_t>(), py::arg("seed"), py::arg("expected") = 0)
        .def("add_unique_many", [](PyKeySet& self, const py::object& keys) {
            // Whether each key is new (and now in the set); an interrupt leaves the keys before it
            // added, as the Store's bulk calls do for a batch they could not finish.
            const std::vector<KeyBatch> batches = make_batches(self.hasher, keys, KeyForm::Bytes);
            py::array_t<bool> out = new_array<bool>(total_size(batches));
            bool* const dst = out.mutable_data();
            SignalCheck stop(1);
            {
                py::gil_scoped_release nogil;
                std::lock_guard<std::mutex> g(self.mutex);
                mark_first(self.set, self.hasher, batches, dst, stop);
            }
            stop.raise_if_interrupted();
            return out;
        }, py::arg("keys"))
        .def("__len__", [](const PyKeySet& self) { return self.set.size(); });
#if defined(_WIN32)
    (void)m;
#else
    // inputs: (fd, bytes read from it already) pairs, each fd readable again from starts[i]
    // (regular files); memory: the key set's budget in bytes; expected: a size hint (keys);
    // seed: the hash seed (the caller draws one from the OS: an anonymous set persists nothing);
    // mean_key_bytes: the keys' mean length (0: unknown), which with `expected` plans the passes.
    m.def("_dedup_exact", [](const py::list& inputs, int out_fd, int dropped_fd, const py::list& start_list,
                             uint64_t block, unsigned threads, uint64_t memory, uint64_t expected, uint64_t seed,
                             py::object progress, double mean_key_bytes, int spill_fd, uint64_t spill_log_id,
                             uint64_t max_key, py::object framing) {
        // spill_fd >= 0: inputs read once (see cuckoo::dedup::Spill); max_key: the store's limit
        DedupCall c = dedup_call(inputs, out_fd, dropped_fd, block, threads, spill_fd >= 0 ? max_key : ~uint64_t(0),
                                 std::move(progress), framing);
        std::vector<int64_t> starts;
        for (const py::handle x : start_list) starts.push_back(x.cast<int64_t>());
        if (starts.size() != c.inputs.size()) throw py::value_error("one start offset per input");
        cuckoo::dedup::ExactRun info;
        std::string changed;
        py::dict d = run_dedup(c, [&](DedupCall& call, cuckoo::dedup::Pipeline::Tick tick) {
            try {
                return cuckoo::dedup::with_key_set(call.inputs, starts, call.out_fd, call.dropped_fd,
                                                   cuckoo::KeyHasher{seed}, call.opt, memory, expected,
                                                   std::move(tick), &info, mean_key_bytes,
                                                   cuckoo::dedup::Spill{spill_fd, spill_log_id});
            } catch (const cuckoo::dedup::InputChanged& e) {
                changed = e.what();
                return cuckoo::dedup::Result{};
            }
        });
        if (!changed.empty()) throw py::value_error(changed);
        d["passes"] = info.passes;
        d["splits"] = info.splits;
        d["planned"] = info.planned;
        d["distinct"] = info.distinct;
        d["peak_memory"] = info.peak_set_bytes;
        d["grows"] = info.grows;
        if (info.spilled_at_line != ~uint64_t(0)) {
            d["spilled_at_line"] = info.spilled_at_line;
            d["spilled_keys"] = info.spilled_keys;
            d["store_log_bytes"] = info.store.log_bytes;
            d["store_index_bytes"] = info.store.index_bytes;
            d["store_grows"] = info.store.grows;
            d["store_grows_from_memory"] = info.store.grows_from_memory;
        }
        return d;
    }, py::arg("inputs"), py::arg("out_fd"), py::arg("dropped_fd"), py::arg("starts"), py::arg("block"),
       py::arg("threads"), py::arg("memory"), py::arg("expected"), py::arg("seed"), py::arg("progress"),
       py::arg("mean_key_bytes") = 0.0, py::arg("spill_fd") = -1, py::arg("spill_log_id") = 0,
       py::arg("max_key") = ~uint64_t(0), py::arg("framing") = py::none());
    // --count, --repeated, --unique-only, --keep last (cuckoo/dedup/counted.hpp): the inputs as
    // for _dedup_exact, each readable again from starts[i] (a pipe was copied to a file first).
    m.def("_dedup_counted", [](const py::list& inputs, int out_fd, int dropped_fd, const py::list& start_list,
                               uint64_t block, unsigned threads, uint64_t memory, uint64_t expected, uint64_t seed,
                               py::object progress, double mean_key_bytes, bool keep_last, uint64_t min_count,
                               uint64_t max_count, bool write_counts, const std::string& json_member,
                               py::object framing) {
        DedupCall c = dedup_call(inputs, out_fd, dropped_fd, block, threads, ~uint64_t(0), std::move(progress), framing);
        std::vector<int64_t> starts;
        for (const py::handle x : start_list) starts.push_back(x.cast<int64_t>());
        if (starts.size() != c.inputs.size()) throw py::value_error("one start offset per input");
        if (min_count < 1 || min_count > max_count) throw py::value_error("counts: 1 <= min_count <= max_count");
        cuckoo::dedup::CountOptions how;
        how.keep_last = keep_last;
        how.min_count = min_count;
        how.max_count = max_count;
        how.write_counts = write_counts;
        how.json_member = json_member;
        cuckoo::dedup::CountedRun info;
        std::string changed;
        py::dict d = run_dedup(c, [&](DedupCall& call, cuckoo::dedup::Pipeline::Tick tick) {
            try {
                return cuckoo::dedup::with_counts(call.inputs, starts, call.out_fd, call.dropped_fd,
                                                  cuckoo::KeyHasher{seed}, call.opt, how, memory, expected,
                                                  std::move(tick), &info, mean_key_bytes);
            } catch (const cuckoo::dedup::InputChanged& e) {
                changed = e.what();
                return cuckoo::dedup::Result{};
            }
        });
        if (!changed.empty()) throw py::value_error(changed);
        d["passes"] = info.passes;
        d["ranges"] = info.ranges;
        d["distinct"] = info.distinct;
        d["peak_memory"] = info.peak_set_bytes;
        return d;
    }, py::arg("inputs"), py::arg("out_fd"), py::arg("dropped_fd"), py::arg("starts"), py::arg("block"),
       py::arg("threads"), py::arg("memory"), py::arg("expected"), py::arg("seed"), py::arg("progress"),
       py::arg("mean_key_bytes"), py::arg("keep_last"), py::arg("min_count"), py::arg("max_count"),
       py::arg("write_counts"), py::arg("json_member"), py::arg("framing") = py::none());
    // --window (cuckoo/dedup/windowed.hpp): `records` > 0 a count window, else `seconds` of
    // arrival time; exact, or approximate at `fpr`; `seed` the window's hash seed.
    // time_framing (event time, --time-key): the framing of each record's time field, else None.
    m.def("_dedup_window", [](const py::list& inputs, int out_fd, int dropped_fd, uint64_t block, unsigned threads,
                              py::object progress, uint64_t records, double seconds, bool exact, double fpr,
                              unsigned generations, uint64_t seed, py::object framing, py::object time_framing) {
        DedupCall c = dedup_call(inputs, out_fd, dropped_fd, block, threads, ~uint64_t(0), std::move(progress), framing);
        const bool event_time = !time_framing.is_none();
        const cuckoo::dedup::Framing time_field = framing_from(time_framing);
        if (event_time && (!time_field.keyed() || time_field.kind != c.opt.framing.kind))
            throw py::value_error("the time field's framing must be the records' own");
        cuckoo::WindowConfig cfg;
        cfg.records = records;
        cfg.seconds = seconds;
        cfg.lateness = event_time ? -1 : 0;  // (event time: the window itself, as Spark; arrival never goes back)
        cfg.exact = exact;
        cfg.fpr = fpr;
        cfg.generations = generations;
        cfg.seed = seed;
        std::unique_ptr<cuckoo::Window> window;
        try {
            window.reset(new cuckoo::Window(cfg));
        } catch (const std::invalid_argument& e) {
            throw py::value_error(e.what());
        }
        uint64_t peak = 0;
        cuckoo::dedup::WindowRun info;
        py::dict d = run_dedup(c, [&](DedupCall& call, cuckoo::dedup::Pipeline::Tick tick) {
            auto measured = [&, tick](const cuckoo::dedup::Result& r) {
                peak = std::max(peak, window->memory_bytes());
                return tick(r);
            };
            cuckoo::dedup::Result r = cuckoo::dedup::with_window(std::move(call.inputs), call.out_fd, call.dropped_fd,
                                                                 *window, call.opt, measured,
                                                                 event_time ? &time_field : nullptr, &info);
            peak = std::max(peak, window->memory_bytes());
            return r;
        });
        d["window_keys"] = window->entries();
        d["window_memory"] = window->memory_bytes();
        d["window_peak_memory"] = peak;
        d["generations"] = window->generation_count();
        d["fpr_bound"] = window->fpr_bound();
        d["late"] = window->late();
        d["untimed"] = info.untimed;
        return d;
    }, py::arg("inputs"), py::arg("out_fd"), py::arg("dropped_fd"), py::arg("block"), py::arg("threads"),
       py::arg("progress"), py::arg("records"), py::arg("seconds"), py::arg("exact"), py::arg("fpr"),
       py::arg("generations"), py::arg("seed"), py::arg("framing") = py::none(),
       py::arg("time_framing") = py::none());
#endif
}

}  // namespace cuckoo_py
