// cuckoo._core._Store: locking and GIL handling around cuckoo::Store (the exact store,
// cpp/include/cuckoo/store.hpp); keys and values become byte spans in keys.hpp, and the lock
// guards, the caster and the interrupt check are those of shared.hpp. The Python class
// cuckoo.Store (python/cuckoo/store.py) wraps it as a MutableMapping. No algorithm lives here.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "errors.hpp"
#include "shared.hpp"
#include "store_binding.hpp"

namespace cuckoo_py {
namespace {

// cuckoo.StoreLockedError (CuckooError, OSError). Defined on every platform, so that the
// package imports the same names everywhere.
PyObject* add_store_locked_error(py::module_& m) {
    py::tuple locked_bases = py::make_tuple(py::handle(error_types().base), py::handle(PyExc_OSError));
    PyObject* locked = PyErr_NewExceptionWithDoc(
        "cuckoo.StoreLockedError", "The store is open for writing elsewhere (one writer at a time).", locked_bases.ptr(),
        nullptr);
    if (!locked) throw py::error_already_set();
    m.add_object("StoreLockedError", py::handle(locked));  // the module keeps the reference we borrow
    return locked;
}

// cuckoo.StoreForkedError (CuckooError, RuntimeError): a write through a store inherited across
// fork(). Defined on every platform too.
PyObject* add_store_forked_error(py::module_& m) {
    py::tuple bases = py::make_tuple(py::handle(error_types().base), py::handle(PyExc_RuntimeError));
    PyObject* forked = PyErr_NewExceptionWithDoc(
        "cuckoo.StoreForkedError",
        "A write through a store that the parent process opened before fork(): open the store in the child.",
        bases.ptr(), nullptr);
    if (!forked) throw py::error_already_set();
    m.add_object("StoreForkedError", py::handle(forked));
    return forked;
}

}  // namespace
}  // namespace cuckoo_py

#if defined(_WIN32)
namespace cuckoo_py {
// The store's log needs POSIX files (cpp/include/cuckoo/store_log.hpp: mmap, flock, fdatasync).
// On Windows the module has no _Store and cuckoo.Store raises a clear error
// (python/cuckoo/store.py); the filter works everywhere.
void register_store(py::module_& m) {
    add_store_locked_error(m);
    add_store_forked_error(m);
}
}  // namespace cuckoo_py
#else

#include "cuckoo/store.hpp"
#include "dedup_binding.hpp"
#include "keys.hpp"

namespace cuckoo_py {

namespace {

// Keys of a bulk call are handled this many at a time: the core verifies a chunk's tag matches
// in one sorted pass over the log, and the chunk's spans, hashes and scratch (~40 bytes a key)
// stay small next to the index.
constexpr uint64_t kChunkKeys = uint64_t(1) << 18;

// Readers share the lock (Guarded), writers hold it alone.
struct PyStore : Guarded {
    std::unique_ptr<cuckoo::Store> core;  // null once closed

    cuckoo::Store& open() const {
        if (!core) throw py::value_error("I/O operation on a closed store");
        return *core;
    }
};

}  // namespace
}  // namespace cuckoo_py

// _Store.__new__(_Store) must not crash either: every _Store argument is loaded through the caster
// that refuses an object whose C++ value was never built (shared.hpp).
namespace pybind11 {
namespace detail {
template <>
class type_caster<cuckoo_py::PyStore> : public cuckoo_py::BuiltOnlyCaster<cuckoo_py::PyStore> {};
}  // namespace detail
}  // namespace pybind11

namespace cuckoo_py {
namespace {

// ---- keys and values as spans (keys.hpp) ----

std::vector<KeyBatch> store_batches(const PyStore& self, const py::handle& keys) {
    return make_batches(self.open().hasher(), keys, KeyForm::Bytes);
}

// Runs fn(spans, position of its first key, count) over every chunk of every batch, without the
// GIL (the caller holds the store's lock). Between chunks the interrupt check (signal_check.hpp) runs
// the signal handlers: a Ctrl-C stops the call after the chunk it finished (and a writing call's
// Store::atomically() then undoes the chunks done).
template <class Fn>
void for_each_chunk(const cuckoo::KeyHasher& hs, const std::vector<KeyBatch>& batches, Fn&& fn) {
    KeySpans c;
    uint64_t pos = 0;
    SignalCheck stop(1);
    {
        py::gil_scoped_release nogil;
        for (const KeyBatch& b : batches) {
            for (uint64_t start = 0; start < b.size && !stop.interrupted(); start += kChunkKeys) {
                const uint64_t n = std::min(kChunkKeys, b.size - start);
                fill_spans_and_hashes(hs, b, start, n, c);
                fn(c, pos, n);
                pos += n;
                stop();
            }
            if (stop.interrupted()) break;
        }
    }
    stop.raise_if_interrupted();
}

// ---- scalar calls ----

struct ScalarKey {
    KeyBytes bytes;
    uint64_t hash = 0;
};

void scalar_key(const PyStore& self, const py::handle& key, ScalarKey& k) {
    if (!key_bytes_of_object(key.ptr(), k.bytes)) throw py::error_already_set();
    k.hash = self.open().hasher().hash_key(k.bytes.data, k.bytes.len);
}

py::object store_get(const PyStore& self, const py::handle& key) {
    ScalarKey k;
    scalar_key(self, key, k);
    std::string value;
    bool found;
    {
        ReadLock lock(self);
        found = self.open().get(k.bytes.data, k.bytes.len, k.hash, &value);
    }
    if (!found) return py::none();
    return py::bytes(value);
}

// ---- registration ----

py::dict stats_dict(const cuckoo::StoreStats& s) {
    py::dict d;
    d["live_keys"] = s.live;
    d["log_bytes"] = s.log_bytes;
    d["live_bytes"] = s.live_bytes;
    d["dead_bytes"] = s.log_bytes - cuckoo::store_format::kHeaderSize - s.live_bytes;
    d["index_bytes"] = s.index_bytes;
    d["index_bytes_per_key"] = s.live ? static_cast<double>(s.index_bytes) / static_cast<double>(s.live) : 0.0;
    d["buckets"] = s.bucket_count;
    d["load_factor"] = s.bucket_count ? static_cast<double>(s.live - s.stash) / (4.0 * static_cast<double>(s.bucket_count)) : 0.0;
    d["stash"] = s.stash;
    d["lookups"] = s.lookups;
    d["log_reads"] = s.log_reads;
    d["log_reads_per_lookup"] = s.lookups ? static_cast<double>(s.log_reads) / static_cast<double>(s.lookups) : 0.0;
    d["grows"] = s.grows;
    d["grows_from_memory"] = s.grows_from_memory;
    d["recovered_bytes"] = s.recovered_bytes;
    d["recovered_at"] = s.recovered_at;
    d["recovered_regions"] = s.recovered_regions;
    d["replayed_records"] = s.replayed_records;
    d["snapshot_used"] = s.snapshot_used;
    d["snapshot_note"] = s.snapshot_note;
    return d;
}

cuckoo::Store::Options options(bool readonly, uint64_t seed, unsigned tag_bits, uint64_t log_id) {
    if (tag_bits < 1 || tag_bits > 16) throw py::value_error("tag_bits must be between 1 and 16");
    cuckoo::Store::Options o;
    o.readonly = readonly;
    o.seed = seed;
    o.tag_bits = tag_bits;
    o.log_id = log_id;
    return o;
}

// add_unique_many / put_many / discard_many: the chunk loop under the write lock.
py::array_t<bool> apply_many(PyStore& self, cuckoo::Store::Op op, const std::vector<KeyBatch>& batches,
                             const ValueSpans* values) {
    const uint64_t total = total_size(batches);
    py::array_t<bool> out = new_array<bool>(total);
    bool* dst = out.mutable_data();
    WriteLock lock(self);
    cuckoo::Store& s = self.open();
    // All chunks or none: an error or an interrupt between chunks undoes the call.
    s.atomically([&] {
        // Safe without the GIL: the loop reads only buffers that `batches` and `values` hold
        // exported, the store (write lock held), and writes `out`.
        for_each_chunk(s.hasher(), batches, [&](const KeySpans& c, uint64_t pos, uint64_t n) {
            uint64_t done = 0;
            s.apply_chunk(op, n, c.spans.data(), c.hashes.data(), values ? values->spans.data() + pos : nullptr,
                          dst + pos, done);
        });
    });
    return out;
}

}  // namespace

void register_store(py::module_& m) {
    PyObject* locked = add_store_locked_error(m);
    static PyObject* locked_type = locked;
    static PyObject* forked_type = add_store_forked_error(m);
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const cuckoo::StoreLockedError& e) {
            PyErr_SetString(locked_type, e.what());
        } catch (const cuckoo::StoreForkedError& e) {
            PyErr_SetString(forked_type, e.what());
        } catch (const std::system_error& e) {
            py::object exc = py::reinterpret_steal<py::object>(
                PyObject_CallFunction(PyExc_OSError, "is", e.code().value(), e.what()));
            if (exc) PyErr_SetObject(PyExc_OSError, exc.ptr());
        }
    });

    py::class_<PyStore> cls(m, "_Store", "The compiled part of cuckoo.Store (use cuckoo.Store).");
    cls.def_static(
        "open",
        [](const std::string& path, bool readonly, uint64_t seed, unsigned tag_bits, uint64_t log_id, bool repair) {
            auto s = std::make_unique<PyStore>();
            cuckoo::Store::Options o = options(readonly, seed, tag_bits, log_id);
            o.repair = repair;
            {
                py::gil_scoped_release nogil;  // reading a large log or snapshot takes a while
                s->core = cuckoo::Store::open(path, o);
            }
            return s;
        },
        py::arg("path"), py::arg("readonly"), py::arg("seed"), py::arg("tag_bits"), py::arg("log_id"),
        py::arg("repair") = false);
    cls.def_static(
        "on_fd",
        [](int fd, uint64_t seed, unsigned tag_bits, uint64_t log_id) {
            auto s = std::make_unique<PyStore>();
            s->core = cuckoo::Store::on_fd(fd, options(false, seed, tag_bits, log_id));
            return s;
        },
        py::arg("fd"), py::arg("seed"), py::arg("tag_bits"), py::arg("log_id"));

    cls.def("get", &store_get, py::arg("key"));
    cls.def("contains", [](const PyStore& self, const py::handle& key) {
        ScalarKey k;
        scalar_key(self, key, k);
        ReadLock lock(self);
        return self.open().get(k.bytes.data, k.bytes.len, k.hash, nullptr);
    }, py::arg("key"));
    cls.def("put", [](PyStore& self, const py::handle& key, const py::handle& value) {
        ScalarKey k;
        scalar_key(self, key, k);
        KeyBytes v;
        value_bytes(value, v);
        WriteLock lock(self);
        self.open().put(k.bytes.data, k.bytes.len, k.hash, v.data, v.len);
    }, py::arg("key"), py::arg("value"));
    cls.def("delete", [](PyStore& self, const py::handle& key) {
        ScalarKey k;
        scalar_key(self, key, k);
        WriteLock lock(self);
        return self.open().erase(k.bytes.data, k.bytes.len, k.hash);
    }, py::arg("key"));
    cls.def("__len__", [](const PyStore& self) {
        ReadLock lock(self);
        return self.open().size();
    });

    cls.def("contains_many", [](const PyStore& self, const py::handle& keys) {
        std::vector<KeyBatch> batches = store_batches(self, keys);
        py::array_t<bool> out = new_array<bool>(total_size(batches));
        bool* dst = out.mutable_data();
        ReadLock lock(self);
        cuckoo::Store& s = self.open();
        std::vector<uint64_t> offs;
        for_each_chunk(s.hasher(), batches, [&](const KeySpans& c, uint64_t pos, uint64_t n) {
            offs.resize(n);
            s.locate_chunk(n, c.spans.data(), c.hashes.data(), offs.data());
            for (uint64_t j = 0; j < n; ++j) dst[pos + j] = offs[j] != cuckoo::Store::kNone;
        });
        return out;
    }, py::arg("keys"));
    // get_many: the values (bytes, None where absent) as a list, or, as_parts=True, as
    // (found: bool[n], offsets: int64[n + 1], data: uint8[...]) with value j at
    // data[offsets[j]:offsets[j + 1]] (cuckoo.Store builds an Arrow array from those, zero copy).
    cls.def("get_many", [](const PyStore& self, const py::handle& keys, bool as_parts) -> py::object {
        std::vector<KeyBatch> batches = store_batches(self, keys);
        const uint64_t total = total_size(batches);
        std::vector<uint64_t> value_at(total + 1, 0);
        std::vector<uint8_t> found(total, 0);
        std::vector<unsigned char> data;
        {
            ReadLock lock(self);
            cuckoo::Store& s = self.open();
            std::vector<uint64_t> offs, at, len;
            std::vector<unsigned char> arena;
            for_each_chunk(s.hasher(), batches, [&](const KeySpans& c, uint64_t pos, uint64_t n) {
                offs.resize(n);
                at.assign(n, 0);
                len.assign(n, 0);
                arena.clear();
                s.locate_chunk(n, c.spans.data(), c.hashes.data(), offs.data());
                s.read_values(n, offs.data(), arena, at.data(), len.data());
                for (uint64_t j = 0; j < n; ++j) {
                    found[pos + j] = offs[j] != cuckoo::Store::kNone;
                    data.insert(data.end(), arena.begin() + static_cast<long>(at[j]),
                                arena.begin() + static_cast<long>(at[j] + len[j]));
                    value_at[pos + j + 1] = data.size();
                }
            });
        }
        if (!as_parts) {
            py::list out(total);
            for (uint64_t j = 0; j < total; ++j) {
                if (!found[j]) {
                    out[j] = py::none();
                    continue;
                }
                PyObject* b = PyBytes_FromStringAndSize(reinterpret_cast<const char*>(data.data()) + value_at[j],
                                                        static_cast<Py_ssize_t>(value_at[j + 1] - value_at[j]));
                if (!b) throw py::error_already_set();
                PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(j), b);  // steals b (the slot is still empty)
            }
            return std::move(out);
        }
        py::array_t<bool> f = new_array<bool>(total);
        py::array_t<int64_t> o = new_array<int64_t>(total + 1);
        py::array_t<uint8_t> bytes = new_array<uint8_t>(data.size());
        for (uint64_t j = 0; j < total; ++j) f.mutable_data()[j] = found[j] != 0;
        for (uint64_t j = 0; j <= total; ++j) o.mutable_data()[j] = static_cast<int64_t>(value_at[j]);
        if (!data.empty()) std::memcpy(bytes.mutable_data(), data.data(), data.size());
        return py::make_tuple(f, o, bytes);
    }, py::arg("keys"), py::arg("as_parts") = false);
    cls.def("add_unique_many", [](PyStore& self, const py::handle& keys) {
        return apply_many(self, cuckoo::Store::Op::AddUnique, store_batches(self, keys), nullptr);
    }, py::arg("keys"));
    cls.def("discard_many", [](PyStore& self, const py::handle& keys) {
        return apply_many(self, cuckoo::Store::Op::Discard, store_batches(self, keys), nullptr);
    }, py::arg("keys"));
    cls.def(
        "put_many",
        [](PyStore& self, const py::handle& keys, const py::handle& values) {
            const std::vector<KeyBatch> batches = store_batches(self, keys);  // once: keys may be an iterator
            if (values.is_none()) return apply_many(self, cuckoo::Store::Op::Put, batches, nullptr);
            ValueSpans v;
            collect_values(self.open().hasher(), values, total_size(batches), v);
            return apply_many(self, cuckoo::Store::Op::Put, batches, &v);
        },
        py::arg("keys"), py::arg("values") = py::none());

    // For the CLI's exact dedup: the keys are data[starts[k] : starts[k] + lengths[k]] of one
    // buffer (a block of lines, without their newlines), so no key is copied and a block is one
    // call (one sorted pass over the log) whatever its line lengths.
    cls.def("add_unique_spans", [](PyStore& self, const py::buffer& data,
                                   py::array_t<int64_t, py::array::c_style | py::array::forcecast> starts,
                                   py::array_t<int64_t, py::array::c_style | py::array::forcecast> lengths) {
        const py::buffer_info buf = data.request();
        if (buf.ndim != 1 || buf.itemsize != 1 || (buf.shape[0] > 1 && buf.strides[0] != 1))
            throw py::value_error("data must be a contiguous byte buffer");
        if (starts.ndim() != 1 || lengths.ndim() != 1 || starts.size() != lengths.size())
            throw py::value_error("starts and lengths must be one-dimensional and of the same length");
        const uint64_t n = static_cast<uint64_t>(starts.size());
        const int64_t size = static_cast<int64_t>(buf.shape[0]);
        const int64_t* st = starts.data();
        const int64_t* ln = lengths.data();
        for (uint64_t k = 0; k < n; ++k)
            if (st[k] < 0 || ln[k] < 0 || st[k] > size || ln[k] > size - st[k])
                throw py::value_error("span " + std::to_string(k) + " lies outside the data");
        const auto* base = static_cast<const unsigned char*>(buf.ptr);
        py::array_t<bool> out = new_array<bool>(n);
        bool* dst = out.mutable_data();
        WriteLock lock(self);
        cuckoo::Store& s = self.open();
        const cuckoo::KeyHasher hs = s.hasher();
        SignalCheck stop(1);  // between chunks, as for_each_chunk
        // All chunks or none: an error or an interrupt between chunks undoes the call.
        s.atomically([&] {
            {
                py::gil_scoped_release nogil;  // reads data/starts/lengths (held by the caller), writes out
                KeySpans c;
                for (uint64_t pos = 0; pos < n && !stop.interrupted(); pos += kChunkKeys) {
                    const uint64_t m = std::min(kChunkKeys, n - pos);
                    c.spans.resize(m);
                    c.hashes.resize(m);
                    for (uint64_t j = 0; j < m; ++j) {
                        c.spans[j] = {base + st[pos + j], static_cast<uint64_t>(ln[pos + j])};
                        c.hashes[j] = hs.hash_key(c.spans[j].data, c.spans[j].len);
                    }
                    uint64_t done = 0;
                    s.apply_chunk(cuckoo::Store::Op::AddUnique, m, c.spans.data(), c.hashes.data(), nullptr, dst + pos,
                                  done);
                    stop();
                }
            }
            stop.raise_if_interrupted();
        });
        return out;
    }, py::arg("data"), py::arg("starts"), py::arg("lengths"));

    // The native dedup pipeline (cpp/include/cuckoo/dedup.hpp) through this store; `batches`: each
    // block is a store batch committed after its lines were written (dedup --store); `index_bits`:
    // keep_index_bits() first (growths from memory).
    // `journal_fd` (>= 0, with batches): the run journal (cuckoo/dedup/run_journal.hpp), and
    // `start` the point the run starts from (a dict of _run_journal_read's fields).
    cls.def("_dedup", [](PyStore& self, const py::list& inputs, int out_fd, int dropped_fd, uint64_t block,
                         unsigned threads, uint64_t max_key, bool batches, bool index_bits, py::object progress,
                         py::object framing, int journal_fd, py::object start, py::object position) {
        DedupCall c = dedup_call(inputs, out_fd, dropped_fd, block, threads, max_key, std::move(progress), framing);
        const cuckoo::dedup::RunPoint from = start.is_none() ? cuckoo::dedup::RunPoint{} : run_point_from(start.cast<py::dict>());
        // `position(side, written, last)` (None: the fds' offsets): where an output stands for
        // the journal, asked with the GIL (a compressed output ends a member: CompressingWriter).
        cuckoo::dedup::RunJournal::Position where;
        if (!position.is_none())
            where = [&position](int side, uint64_t written, bool last) {
                py::gil_scoped_acquire gil;
                return position(side, written, last).cast<uint64_t>();
            };
        WriteLock lock(self);
        cuckoo::Store& s = self.open();
        return run_dedup(c, [&](DedupCall& call, cuckoo::dedup::Pipeline::Tick tick) {
            return cuckoo::dedup::with_store(s, std::move(call.inputs), call.out_fd, call.dropped_fd, call.opt, batches,
                                             index_bits, std::move(tick), journal_fd, from, where);
        });
    }, py::arg("inputs"), py::arg("out_fd"), py::arg("dropped_fd"), py::arg("block"), py::arg("threads"),
       py::arg("max_key"), py::arg("batches"), py::arg("index_bits"), py::arg("progress"),
       py::arg("framing") = py::none(), py::arg("journal_fd") = -1, py::arg("start") = py::none(),
       py::arg("position") = py::none());

    // Iteration support: live record offsets in log order, and the records at given offsets.
    cls.def("live_offsets", [](const PyStore& self) {
        std::vector<uint64_t> offs;
        uint64_t version;
        {
            ReadLock lock(self);
            py::gil_scoped_release nogil;
            offs = self.open().live_offsets();
            version = self.open().version();
        }
        py::array_t<uint64_t> out = new_array<uint64_t>(offs.size());
        if (!offs.empty()) std::memcpy(out.mutable_data(), offs.data(), offs.size() * 8);
        return py::make_tuple(out, version);
    });
    cls.def("version", [](const PyStore& self) {
        ReadLock lock(self);
        return self.open().version();
    });
    // Records at `offsets` (from live_offsets of the same version): a list of keys, or of
    // (key, value) pairs.
    cls.def("read_records", [](const PyStore& self, py::array_t<uint64_t, py::array::c_style | py::array::forcecast> offsets,
                               uint64_t version, bool with_values) {
        ReadLock lock(self);
        cuckoo::Store& s = self.open();
        if (s.version() != version) throw py::value_error("store changed during iteration");
        const uint64_t* o = offsets.data();
        py::list out(offsets.size());
        for (py::ssize_t j = 0; j < offsets.size(); ++j) {
            const cuckoo::RecordView r = s.read_record(o[j]);
            py::bytes k(reinterpret_cast<const char*>(r.key), r.key_len);
            if (with_values)
                out[static_cast<size_t>(j)] = py::make_tuple(k, py::bytes(reinterpret_cast<const char*>(r.value), r.value_len));
            else
                out[static_cast<size_t>(j)] = k;
        }
        return out;
    }, py::arg("offsets"), py::arg("version"), py::arg("with_values"));

    cls.def("reserve", [](PyStore& self, uint64_t n) {
        WriteLock lock(self);
        py::gil_scoped_release nogil;
        self.open().reserve(n);
    }, py::arg("n"));
    cls.def("sync", [](PyStore& self) {
        WriteLock lock(self);
        py::gil_scoped_release nogil;
        self.open().sync();
    });
    cls.def("snapshot", [](PyStore& self) {
        WriteLock lock(self);
        py::gil_scoped_release nogil;
        self.open().write_snapshot();
    });
    cls.def("compact", [](PyStore& self, uint64_t new_log_id) {
        WriteLock lock(self);
        py::gil_scoped_release nogil;
        self.open().compact(new_log_id);
    }, py::arg("new_log_id"));
    // Closed afterwards even when a write of the close fails (the core releases the files and
    // the lock first): the error is raised once, and a second close() does nothing.
    cls.def("close", [](PyStore& self) {
        WriteLock lock(self);
        if (!self.core) return;
        std::unique_ptr<cuckoo::Store> core = std::move(self.core);
        py::gil_scoped_release nogil;
        core->close();
    });
    cls.def("begin_batch", [](PyStore& self) {
        WriteLock lock(self);
        self.open().begin_batch();
    });
    cls.def("commit_batch", [](PyStore& self) {
        WriteLock lock(self);
        py::gil_scoped_release nogil;
        self.open().commit_batch();
    });
    cls.def("rollback_batch", [](PyStore& self) {
        WriteLock lock(self);
        py::gil_scoped_release nogil;
        self.open().rollback_batch();
    });
    cls.def_property_readonly("in_batch", [](const PyStore& self) {
        ReadLock lock(self);
        return self.open().in_batch();
    });
    cls.def_property_readonly("closed", [](const PyStore& self) { return !self.core; });

    // Tests only (tests/test_store_faults.py): the nth write-like call of any store from now
    // fails with OSError(error), and every later one too if persistent (store_log.hpp,
    // io_testing); nth 0 disarms. Returns the number of such calls since the previous arming.
    m.def("_testing_io_fault", [](int64_t nth, int error, bool persistent) {
        if (nth < 0) throw py::value_error("nth must be >= 0");
        const uint64_t seen = cuckoo::io_testing::writes.load();
        cuckoo::io_testing::arm(nth, error, persistent);
        return seen;
    }, py::arg("nth"), py::arg("error"), py::arg("persistent") = false);
    cls.def("stats", [](const PyStore& self) {
        ReadLock lock(self);
        return stats_dict(self.open().stats());
    });
    cls.def_property_readonly("writable", [](const PyStore& self) { return self.open().writable(); });
    cls.def_property_readonly("seed", [](const PyStore& self) { return self.open().header().seed; });
    cls.def_property_readonly("tag_bits", [](const PyStore& self) { return self.open().header().tag_bits; });
}

}  // namespace cuckoo_py

#endif  // !defined(_WIN32)
