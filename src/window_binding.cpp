// cuckoo._core._Window: a thin layer over cuckoo::Window (cpp/include/cuckoo/window.hpp). Keys
// become bytes and hashes here exactly as the store and the exact dedup take them (keys.hpp: an
// int is its 8 little-endian bytes, a str its UTF-8), so a key hashes as it does in a Filter.
// The Python class is cuckoo.Window (python/cuckoo/window.py): it checks arguments, reads the
// clock for arrival time, and turns verdicts into booleans.
#include "window_binding.hpp"

#include <pybind11/numpy.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "cuckoo/window.hpp"
#include "keys.hpp"
#include "shared.hpp"

namespace cuckoo_py {

namespace {

struct PyWindow {
    explicit PyWindow(const cuckoo::WindowConfig& c) : w(c) {}
    cuckoo::Window w;
    // One call in the window at a time: see_many runs without the GIL.
    std::mutex mutex;
};

// Locks the window's mutex. The scalar call holds the GIL: when a bulk call (which takes the GIL
// back for its interrupt check) has the mutex, waiting for it with the GIL held would deadlock,
// so only then is the GIL released for the wait.
std::unique_lock<std::mutex> lock_window(PyWindow& self) {
    std::unique_lock<std::mutex> lk(self.mutex, std::try_to_lock);
    if (!lk.owns_lock()) {
        py::gil_scoped_release nogil;
        lk.lock();
    }
    return lk;
}

// f() under the window's lock: a bulk call in another thread may be changing the generations.
template <class F>
auto locked(PyWindow& self, F&& f) {
    auto lk = lock_window(self);
    return f();
}

// The times of a bulk call: None (count windows), a float (every key's: arrival time), or a
// float64 array of one time a key.
const double* times_of(const PyWindow& self, const py::object& times, uint64_t n, py::array_t<double>& held,
                       std::vector<double>& same) {
    const bool count = self.w.is_count();
    if (times.is_none()) {
        if (!count) throw py::value_error("a time window needs a time for every key");
        return nullptr;
    }
    if (count) throw py::value_error("a count window takes no times");
    if (PyFloat_Check(times.ptr())) {
        const double t = times.cast<double>();
        self.w.check_time(t);
        same.assign(n, t);
        return same.data();
    }
    held = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(times);
    if (!held || held.ndim() != 1) throw py::type_error("times must be a one-dimensional array of seconds (float64)");
    if (static_cast<uint64_t>(held.size()) != n)
        throw py::value_error("times has " + std::to_string(held.size()) + " values for " + std::to_string(n) + " keys");
    const double* t = held.data();
    // Every time is checked before the first record changes the window.
    for (uint64_t j = 0; j < n; ++j) self.w.check_time(t[j]);
    return t;
}

}  // namespace

void register_window(py::module_& m) {
    py::class_<PyWindow>(m, "_Window")
        .def(py::init([](uint64_t records, double seconds, double lateness, bool exact, double fpr, unsigned generations,
                         uint64_t seed) {
            cuckoo::WindowConfig c;
            c.records = records;
            c.seconds = seconds;
            c.lateness = lateness;
            c.exact = exact;
            c.fpr = fpr;
            c.generations = generations;
            c.seed = seed;
            return new PyWindow(c);
        }), py::arg("records"), py::arg("seconds"), py::arg("lateness"), py::arg("exact"), py::arg("fpr"),
             py::arg("generations"), py::arg("seed"))
        // One record: 0 kept, 1 duplicate, 2 late (kept).
        .def("see", [](PyWindow& self, const py::handle& key, double t) {
            KeyBytes kb;
            if (!key_bytes_of_object(key.ptr(), kb)) throw py::error_already_set();
            const uint64_t h = self.w.hasher().hash_one_key(kb.data, kb.len);
            auto lk = lock_window(self);
            return static_cast<int>(self.w.see(cuckoo::KeySpan{kb.data, kb.len}, h, t));
        }, py::arg("key"), py::arg("time"))
        // A batch: the verdicts (uint8, as see() returns them), the records applied in order.
        .def("see_many", [](PyWindow& self, const py::object& keys, const py::object& times) {
            // Keys converted (and checked) with the GIL held, before anything changes.
            const std::vector<KeyBatch> batches = make_batches(self.w.hasher(), keys, KeyForm::Bytes);
            const uint64_t n = total_size(batches);
            py::array_t<double> held;
            std::vector<double> same;
            const double* t = times_of(self, times, n, held, same);
            py::array_t<uint8_t> out = new_array<uint8_t>(n);
            auto* dst = reinterpret_cast<cuckoo::WindowVerdict*>(out.mutable_data());
            SignalCheck stop(1);
            {
                // Safe without the GIL: the batches hold the buffers they view exported, `held`
                // and `out` are ours, and the mutex keeps other calls out of the window.
                py::gil_scoped_release nogil;
                std::lock_guard<std::mutex> g(self.mutex);
                constexpr uint64_t kChunk = uint64_t(1) << 14;  // keys hashed at a time
                KeySpans c;
                uint64_t pos = 0;
                for (const KeyBatch& b : batches)
                    for (uint64_t start = 0; start < b.size && !stop.interrupted(); start += kChunk) {
                        const uint64_t k = std::min(kChunk, b.size - start);
                        fill_spans_and_hashes(self.w.hasher(), b, start, k, c);
                        self.w.see_many(k, [&](uint64_t j) { return c.spans[j]; }, c.hashes.data(), t ? t + pos : nullptr,
                                        dst + pos, [] { return false; });
                        pos += k;
                        stop();
                    }
            }
            stop.raise_if_interrupted();
            return out;
        }, py::arg("keys"), py::arg("times"))
        .def_property_readonly("processed", [](PyWindow& s) { return locked(s, [&] { return s.w.records(); }); })
        .def_property_readonly("duplicates", [](PyWindow& s) { return locked(s, [&] { return s.w.duplicates(); }); })
        .def_property_readonly("late", [](PyWindow& s) { return locked(s, [&] { return s.w.late(); }); })
        .def_property_readonly("entries", [](PyWindow& s) { return locked(s, [&] { return s.w.entries(); }); })
        .def_property_readonly("generations", [](PyWindow& s) { return locked(s, [&] { return s.w.generation_count(); }); })
        .def_property_readonly("memory_bytes", [](PyWindow& s) { return locked(s, [&] { return s.w.memory_bytes(); }); })
        .def_property_readonly("fpr_bound", [](PyWindow& s) { return locked(s, [&] { return s.w.fpr_bound(); }); })
        .def_property_readonly("max_time", [](PyWindow& s) { return locked(s, [&] { return s.w.max_time(); }); })
        .def_property_readonly("watermark", [](PyWindow& s) { return locked(s, [&] { return s.w.watermark(); }); })
        .def_property_readonly("lateness", [](PyWindow& s) { return locked(s, [&] { return s.w.lateness(); }); })
        .def_property_readonly("generation_width", [](PyWindow& s) { return locked(s, [&] { return s.w.generation_width(); }); })
        .def_property_readonly("generation_records", [](PyWindow& s) { return locked(s, [&] { return s.w.generation_records(); }); });
}

}  // namespace cuckoo_py
