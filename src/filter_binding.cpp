// cuckoo._core.Filter: argument checking, key conversion, locking and GIL handling around the
// core. No algorithm lives here.
#include "filter_binding.hpp"

#include <pybind11/numpy.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "cuckoo/format.hpp"
#include "errors.hpp"
#include "keys.hpp"
#include "memory.hpp"

namespace cuckoo_py {

namespace {

constexpr double kDefaultFpr = 0.001;
constexpr unsigned kDefaultMaxKicks = 500;
std::string with_commas(uint64_t v) {
    std::string s = std::to_string(v);
    for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
    return s;
}

std::string percent(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * x);
    return buf;
}

// ---- argument checking ----

long long int_arg(const py::handle& v, const char* name, long long lo, long long hi) {
    if (!PyLong_Check(v.ptr()) || PyBool_Check(v.ptr())) {
        if (PyIndex_Check(v.ptr()) && !PyBool_Check(v.ptr())) return int_arg(py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr())), name, lo, hi);
        throw py::type_error(std::string(name) + " must be an int, not " + type_name(v.ptr()));
    }
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (overflow || x < lo || x > hi)
        throw py::value_error(std::string(name) + " must be between " + std::to_string(lo) + " and " +
                              std::to_string(hi) + ", got " + py::str(v).cast<std::string>());
    return x;
}

// seed=None or seed="random": a secret seed, 64 bits from the OS (os.urandom), stored in the
// filter's files like any seed (see "Untrusted keys" in the README).
uint64_t random_seed() {
    const std::string bytes = py::module_::import("os").attr("urandom")(8).cast<std::string>();
    uint64_t s = 0;
    for (size_t i = 0; i < 8; ++i) s |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
    return s;
}

uint64_t seed_arg(const py::handle& v) {
    if (v.is_none()) return random_seed();
    if (PyUnicode_Check(v.ptr())) {
        if (v.cast<std::string>() == "random") return random_seed();
        throw py::value_error("seed must be an int, None or 'random', got " + py::repr(v).cast<std::string>());
    }
    if (!PyLong_Check(v.ptr()) || PyBool_Check(v.ptr()))
        throw py::type_error(std::string("seed must be an int, None or 'random', not ") + type_name(v.ptr()));
    const unsigned long long s = PyLong_AsUnsignedLongLong(v.ptr());
    if (s == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
        PyErr_Clear();
        throw py::value_error("seed must be between 0 and 2**64 - 1, got " + py::str(v).cast<std::string>());
    }
    return s;
}

double fpr_arg(const py::handle& v) {
    if (!PyFloat_Check(v.ptr()) && !(PyLong_Check(v.ptr()) && !PyBool_Check(v.ptr())))
        throw py::type_error(std::string("fpr must be a float, not ") + type_name(v.ptr()));
    // PyFloat_AsDouble rather than py::cast: an int too large for a double (10**400) must be a
    // ValueError like any other out-of-range fpr, not pybind11's RuntimeError "Unable to cast".
    const double x = PyFloat_AsDouble(v.ptr());
    if (x == -1.0 && PyErr_Occurred()) PyErr_Clear();
    if (!(x > 0.0 && x < 1.0)) throw py::value_error("fpr must be in (0, 1), got " + py::repr(v).cast<std::string>());
    return x;
}

cuckoo::HashAlgorithm hash_algorithm_arg(const py::handle& v) {
    if (!PyUnicode_Check(v.ptr()))
        throw py::type_error(std::string("hash_algorithm must be a str, not ") + type_name(v.ptr()));
    const std::string name = v.cast<std::string>();
    if (name == "xxh3") return cuckoo::HashAlgorithm::xxh3;
    if (name == "xxh64") return cuckoo::HashAlgorithm::xxh64;
    throw py::value_error("hash_algorithm must be 'xxh3' or 'xxh64', got " + py::repr(v).cast<std::string>());
}

// The arguments of Filter() that decide its shape, checked (TypeError/ValueError naming the
// argument); fingerprint_bits 0: from fpr.
struct ShapeArgs {
    uint64_t capacity;
    double fpr;
    unsigned bucket_size;
    unsigned fingerprint_bits;
    bool semi_sorted;
};

ShapeArgs shape_args(const py::handle& capacity, const py::handle& fpr, const py::handle& fingerprint_bits,
                     const py::handle& bucket_size, const py::handle& semi_sort) {
    if (!PyBool_Check(semi_sort.ptr())) throw py::type_error(std::string("semi_sort must be a bool, not ") + type_name(semi_sort.ptr()));
    ShapeArgs a{0, kDefaultFpr, 0, 0, semi_sort.ptr() == Py_True};
    const long long cap = int_arg(capacity, "capacity", 0, std::numeric_limits<long long>::max());
    if (cap <= 0) throw py::value_error("capacity must be positive, got " + std::to_string(cap));
    a.capacity = static_cast<uint64_t>(cap);
    a.bucket_size = static_cast<unsigned>(int_arg(bucket_size, "bucket_size", 0, 1 << 20));
    if (!cuckoo::valid_bucket_size(a.bucket_size))
        throw py::value_error("bucket_size must be 2, 4 or 8, got " + std::to_string(a.bucket_size));
    if (!fingerprint_bits.is_none()) {
        if (!fpr.is_none()) throw py::value_error("give fpr or fingerprint_bits, not both");
        a.fingerprint_bits = static_cast<unsigned>(int_arg(fingerprint_bits, "fingerprint_bits", cuckoo::kMinFingerprintBits,
                                                           cuckoo::kMaxFingerprintBits));
    } else if (!fpr.is_none()) {
        a.fpr = fpr_arg(fpr);
    }
    return a;
}

// The core's filter_shape (the one sizing rule) for checked arguments, its errors as ValueError.
// `for_filter`: a capacity too large is explained for Filter() (how many keys fit at most).
cuckoo::FilterShape shape_of(const ShapeArgs& a, bool for_filter) {
    try {
        return cuckoo::filter_shape(a.capacity, a.fpr, a.bucket_size, a.fingerprint_bits, a.semi_sorted);
    } catch (const std::length_error& e) {
        if (!for_filter) throw py::value_error(e.what());
        throw py::value_error("capacity is too large: " + with_commas(a.capacity) + " keys, but a filter with bucket_size=" +
                              std::to_string(a.bucket_size) + " holds at most " +
                              with_commas(static_cast<uint64_t>(static_cast<double>(cuckoo::kMaxBucketCount) * a.bucket_size *
                                                                cuckoo::design_load(a.bucket_size, a.semi_sorted))) +
                              " keys (2^32 buckets); split the keys over several filters");
    } catch (const std::invalid_argument& e) {
        std::string what = e.what();
        if (a.semi_sorted && what.rfind("semi_sort", 0) == 0) what += " (semi-sorted buckets hold 4 fingerprints of 4..16 bits)";
        throw py::value_error(what);
    }
}

PyFilter make_filter(const py::handle& capacity, const py::handle& fpr, const py::handle& fingerprint_bits,
                     const py::handle& bucket_size, const py::handle& max_kicks, const py::handle& seed,
                     const py::handle& growable, const py::handle& hash_algorithm, const py::handle& semi_sort,
                     const py::handle& expansion) {
    if (!PyBool_Check(growable.ptr())) throw py::type_error(std::string("growable must be a bool, not ") + type_name(growable.ptr()));
    unsigned factor = cuckoo::kDefaultExpansion;
    if (!expansion.is_none()) {
        if (growable.ptr() != Py_True) throw py::value_error("expansion needs growable=True (a fixed filter never grows)");
        factor = static_cast<unsigned>(int_arg(expansion, "expansion", cuckoo::kMinExpansion, cuckoo::kMaxExpansion));
    }
    const ShapeArgs args = shape_args(capacity, fpr, fingerprint_bits, bucket_size, semi_sort);
    const unsigned kicks = static_cast<unsigned>(int_arg(max_kicks, "max_kicks", 0, cuckoo::kMaxKicksLimit));
    const uint64_t s = seed_arg(seed);
    const cuckoo::HashAlgorithm algorithm = hash_algorithm_arg(hash_algorithm);
    const cuckoo::FilterShape shape = shape_of(args, true);
    require_memory(shape.table_bytes, "Filter(capacity=" + with_commas(args.capacity) +
                                          ", fingerprint_bits=" + std::to_string(shape.fingerprint_bits) + ")");
    return PyFilter(cuckoo::StagedFilter(cuckoo::Filter(shape, args.capacity, kicks, s, algorithm), growable.ptr() == Py_True, factor));
}

// _core._filter_shape: the shape Filter() would give, for cuckoo.theory and the CLI.
py::dict filter_shape_dict(const py::handle& capacity, const py::handle& fpr, const py::handle& fingerprint_bits,
                           const py::handle& bucket_size, const py::handle& semi_sort) {
    const cuckoo::FilterShape shape = shape_of(shape_args(capacity, fpr, fingerprint_bits, bucket_size, semi_sort), false);
    using namespace pybind11::literals;
    return py::dict("bucket_count"_a = shape.bucket_count, "bucket_size"_a = shape.bucket_size,
                    "fingerprint_bits"_a = shape.fingerprint_bits, "semi_sort"_a = shape.semi_sorted,
                    "design_load"_a = shape.design_load, "table_bytes"_a = shape.table_bytes);
}

}  // namespace

// ---- failures (scalar and bulk inserts) ----

// Both declared in filter_binding.hpp.
std::pair<std::string, const char*> failure_text(const cuckoo::StagedFilter& f) {
    const unsigned copies = 2 * f.first().bucket_size();
    const std::string load = "load " + percent(f.load_factor());
    switch (f.last_failure()) {
        case cuckoo::InsertFailure::copies:
            return {"the key's fingerprint already fills both of its buckets (" + std::to_string(copies) +
                        " copies: the key was added " + std::to_string(copies) +
                        " times, or keys colliding with it were); a filter holds at most 2 x bucket_size copies "
                        "of one key, and a growable filter does not grow for them. For repeated keys use "
                        "add_unique / add_unique_many / update (each key once)",
                    "copies"};
        case cuckoo::InsertFailure::low_load:
            return {"an insert failed at " + load + " of the newest stage's slots, far below its design load: the "
                        "keys do not spread like random keys (many copies of a few keys, or keys crafted to "
                        "collide), and a growable filter does not grow for them. Use add_unique for repeated keys "
                        "and seed='random' for untrusted keys",
                    "low_load"};
        case cuckoo::InsertFailure::memory:
            return {"the filter cannot grow: its next stage would need " +
                        gib(f.next_stage().table_bytes) + " of table, but only " +
                        gib(cuckoo::available_memory_bytes()) + " of memory is available (" + load + ")",
                    "memory"};
        case cuckoo::InsertFailure::max_stages:
            return {"the filter cannot grow: it has the most stages a filter may have (" +
                        std::to_string(cuckoo::kMaxStages) + ", " + load + ")",
                    "max_stages"};
        default:
            return {"no room for the key within max_kicks=" + std::to_string(f.first().max_kicks()) + " (" + load +
                        ", " + with_commas(f.size()) + " of " + with_commas(f.slot_count()) + " slots)",
                    "full"};
    }
}

[[noreturn]] void raise_full_in_batch(const std::pair<std::string, const char*>& why, uint64_t done, uint64_t total) {
    raise_filter_full("filter is full: " + why.first + "; " + with_commas(done) + " of " + with_commas(total) +
                          " keys of the batch were handled before that key; every key stored before is still there",
                      done, why.second);
}

namespace {

// ---- merging ----

// A deep copy, taken without the GIL: copying a large table takes a while. A read-only filter (a
// view of a memory-mapped file) may have been opened without reading its tables: they are
// recounted first, so that a header whose item counts disagree with its tables raises FormatError
// here instead of being carried into a writable filter (and from there into a file with fresh
// checksums).
PyFilter copy_of(const PyFilter& self) {
    ReadLock lock(self);
    py::gil_scoped_release nogil;  // safe: reads only the table, under the read lock
    if (!self.core.writable()) cuckoo::format::check_item_counts(self.core);
    return PyFilter(self);
}

void merge_into(PyFilter& self, const PyFilter& other, cuckoo::MergeMode mode) {
    // Snapshot `other` first and only then lock `self`: never hold one filter's lock while
    // waiting for another's (a.merge(b) and b.merge(a) in two threads must not deadlock).
    // Both whole-table steps run without the GIL: they touch only the two filters, under their locks.
    const cuckoo::StagedFilter snapshot = [&] {
        ReadLock lock(other);
        py::gil_scoped_release nogil;
        return other.core;
    }();
    WriteLock lock(self);
    try {
        py::gil_scoped_release nogil;
        self.core.merge(snapshot, mode);
    } catch (const cuckoo::FilterFullError& e) {
        raise_filter_full(e.what(), 0, "full");
    }
}

// The intersection &: locked like merge_into (other snapshotted first). A mismatch raises
// cuckoo::MergeError (ValueError in Python).
void intersect_into(PyFilter& self, const PyFilter& other) {
    const cuckoo::StagedFilter snapshot = [&] {
        ReadLock lock(other);
        py::gil_scoped_release nogil;
        return other.core;
    }();
    WriteLock lock(self);
    try {
        py::gil_scoped_release nogil;
        self.core.intersect(snapshot);
    } catch (const cuckoo::FilterFullError& e) {
        // Grown filters only: the finer entries that replace coarser ones would need more stages
        // than a filter may have (the filter is unchanged).
        raise_filter_full(e.what(), 0, "max_stages");
    }
}

// The binary operators: | (set union), + (multiset sum) and & (intersection), in place or into a
// copy. `combine(PyFilter& into, const PyFilter& other)` does the in-place step.
template <class Combine>
py::object combine_op(const py::handle& self, const py::handle& other, bool in_place, Combine&& combine) {
    if (!py::isinstance<PyFilter>(other)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
    if (in_place) {
        combine(self.cast<PyFilter&>(), other.cast<const PyFilter&>());
        return py::reinterpret_borrow<py::object>(self);
    }
    PyFilter result = copy_of(self.cast<const PyFilter&>());
    combine(result, other.cast<const PyFilter&>());
    return py::cast(std::move(result));
}
py::object merge_op(const py::handle& self, const py::handle& other, cuckoo::MergeMode mode, bool in_place) {
    return combine_op(self, other, in_place, [mode](PyFilter& into, const PyFilter& o) { merge_into(into, o, mode); });
}
py::object intersect_op(const py::handle& self, const py::handle& other, bool in_place) {
    return combine_op(self, other, in_place, intersect_into);
}

// The whole-table comparison of == and != (seconds for filters of 10^7 keys), without the GIL.
bool equal(const PyFilter& a, const PyFilter& b) {
    if (&a == &b) return true;
    ReadLockPair locks(a, b);
    py::gil_scoped_release nogil;  // safe: reads only the two tables, under their read locks
    return a.core == b.core;
}

}  // namespace

void set_python_error_from_exception() {
    try {
        throw;
    } catch (py::error_already_set& e) {
        e.restore();
    } catch (...) {
        py::detail::try_translate_exceptions();  // the module's translators, then pybind11's
    }
}

[[noreturn]] void raise_full(const cuckoo::StagedFilter& f) {
    const auto why = failure_text(f);
    raise_filter_full("filter is full: " + why.first + "; the filter is unchanged", 0, why.second);
}

FilterState* filter_of(PyObject* self) {
    auto* inst = reinterpret_cast<py::detail::instance*>(self);
    // pybind11's own fast path (get_value_and_holder): one bound type in the instance's bases keeps
    // the value pointer and the holder's state inline. A scalar call asks on every key, and the
    // general lookup (twice: built? then the value) was 37 instructions of an `add`'s ~450.
    if (inst->simple_layout) {
        if (inst->simple_holder_constructed) return static_cast<PyFilter*>(inst->simple_value_holder[0]);
    } else if (value_is_built(self)) {
        return static_cast<PyFilter*>(inst->get_value_and_holder().value_ptr());
    }
    PyErr_SetString(PyExc_TypeError, kFilterNotBuilt);
    return nullptr;
}

void register_filter(py::module_& m) {
    using cuckoo::Filter;
    // The argument table is an RST literal block ("::" and indented), so that help() and the Sphinx
    // site (docs/, warnings as errors) show the same text.
    FilterClass cls(m, "Filter", R"doc(
A cuckoo filter: a compact set of keys that answers "maybe present" or "certainly absent".

Arguments::

    Filter(capacity, fpr=None, *, fingerprint_bits=None, bucket_size=4, max_kicks=500, seed=0,
           growable=False, hash_algorithm="xxh3", semi_sort=False, expansion=None)

    capacity          number of keys the filter is sized for (inserting more may fail)
    fpr               target false-positive rate at capacity (default 0.001); picks the
                      fingerprint width f = ceil(log2(2 * bucket_size / fpr))
    fingerprint_bits  the fingerprint width f (4..32) instead of fpr
    bucket_size       slots per bucket: 2, 4 (default) or 8
    max_kicks         buckets the eviction search may visit before an insert gives up (0..65536)
    seed              seed of the key hash (0 .. 2**64 - 1; filters are reproducible), or None /
                      "random" for a secret seed drawn from the OS (stored in the filter's files):
                      use it for keys an adversary may choose
    growable          add stages of twice the capacity as the filter fills, instead of failing
    hash_algorithm    the key hash: "xxh3" (XXH3-64, default) or "xxh64" (XXH64, the only hash of
                      releases before 0.2, which cannot read filters that use XXH3)
    semi_sort         semi-sorted buckets (bucket_size=4, f <= 16 only): each bucket kept sorted
                      and the top 4 bits of its 4 fingerprints stored as one 12-bit code, 1 bit
                      per slot less (same false-positive rate; sized to a higher load, 0.955);
                      its files are format version 2, which older releases refuse
    expansion         growable filters: the growth factor of each new stage, 1..4 (default 2;
                      3 grows like 4, a power of two being what stages nest on). The bound on
                      the false-positive rate over all stages: < 2x the first stage's for 2,
                      < 4/3x for 3 and 4 (2 more fingerprint bits per stage); for 1 (stages of
                      the first's size and fingerprints) the first's bound times the stages

Keys are int (64-bit, signed or unsigned), bytes, or str (hashed as UTF-8).
)doc");
    cls.def(py::init(&make_filter), py::arg("capacity"), py::arg("fpr") = py::none(), py::kw_only(),
            py::arg("fingerprint_bits") = py::none(), py::arg("bucket_size") = 4,
            py::arg("max_kicks") = kDefaultMaxKicks, py::arg("seed") = 0, py::arg("growable") = false,
            py::arg("hash_algorithm") = "xxh3", py::arg("semi_sort") = false, py::arg("expansion") = py::none());

    // add, add_unique, discard, remove, count, __contains__, `in`
    if (!register_scalar_calls(reinterpret_cast<PyTypeObject*>(cls.ptr()))) throw py::error_already_set();
    cls.def("__len__", [](const PyFilter& self) { ReadLock lock(self); return self.core.size(); });
    cls.def("clear", [](PyFilter& self) {
        WriteLock lock(self);
        self.core.clear();
    }, "Remove every key.");
    cls.def("copy", &copy_of, "A deep copy (writable, also of a memory-mapped filter).");
    cls.def("__copy__", &copy_of);
    cls.def("__deepcopy__", [](const PyFilter& self, const py::handle&) { return copy_of(self); }, py::arg("memo"));
    cls.def("__eq__", [](const PyFilter& self, const py::handle& other) -> py::object {
        if (!py::isinstance<PyFilter>(other)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
        return py::bool_(equal(self, other.cast<const PyFilter&>()));
    }, py::arg("other"));
    cls.def("__ne__", [](const PyFilter& self, const py::handle& other) -> py::object {
        if (!py::isinstance<PyFilter>(other)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
        return py::bool_(!equal(self, other.cast<const PyFilter&>()));
    }, py::arg("other"));
    cls.attr("__hash__") = py::none();  // mutable, like set

    // bulk operations
    cls.def("add_many", [](PyFilter& self, const py::handle& keys) {
        return insert_batches(self, make_batches(self.hasher, keys), Filter::InsertMode::Always, nullptr);
    }, py::arg("keys"), "Add every key, in order; returns how many were added. On FilterFullError the keys before the failing one stay added (the error's .inserted says how many).");
    cls.def("update", [](PyFilter& self, const py::args& iterables) {
        // Convert every iterable before inserting anything: a bad key in any of them leaves the
        // filter unchanged.
        std::vector<KeyBatch> all;
        for (const py::handle& keys : iterables)
            for (KeyBatch& b : make_batches(self.hasher, keys)) all.push_back(std::move(b));
        insert_batches(self, all, Filter::InsertMode::Unique, nullptr);
    }, "Add each key of every iterable or array given unless it is (maybe) present, like set.update: each key once (add_many adds copies).");
    cls.def("add_unique_many", [](PyFilter& self, const py::handle& keys) {
        // Convert the keys once: a second make_batches would find an iterator or generator
        // exhausted (nothing inserted, an uninitialised mask returned).
        const std::vector<KeyBatch> batches = make_batches(self.hasher, keys);
        py::array_t<bool> out = new_array<bool>(total_size(batches));
        try {
            insert_batches(self, batches, Filter::InsertMode::Unique, out.mutable_data());
        } catch (py::error_already_set& e) {
            // A full filter: the error also carries the answers for the keys handled before it.
            if (e.matches(error_types().full)) {
                const auto done = e.value().attr("inserted").cast<py::ssize_t>();
                e.value().attr("was_new") = out[py::slice(0, done, 1)];
            }
            throw;
        }
        return out;
    }, py::arg("keys"), "Add each key not (maybe) present yet, in order; returns a bool array, True where the key was new. A key repeated in the batch is new only the first time: the dedup primitive.");
    cls.def("contains_many", &contains_many, py::arg("keys"), "A bool array: whether each key is (maybe) present.");
    cls.def("count_many", &count_many, py::arg("keys"), "A uint8 array: count(key) for each key (saturating at 255, which only a grown filter can exceed).");
    cls.def("discard_many", &discard_many, py::arg("keys"), "Discard each key in order; a bool array, True where a copy was removed.");

    // merging
    // Like collections.Counter: | keeps the larger count of each fingerprint in its bucket pair
    // (a set union), + adds counts (a multiset sum; merge is +=).
    cls.def("merge", [](PyFilter& self, const PyFilter& other) { merge_into(self, other, cuckoo::MergeMode::add); },
            py::arg("other"),
            "Add every fingerprint of other, in place: counts add (a multiset sum, the same as +=; | is the set union). "
            "Exact: needs the same seed, bucket size, fingerprint width and capacity. Raises ValueError for mismatched "
            "filters and FilterFullError (filter unchanged) if the result does not fit; a growable filter grows instead.");
    cls.def("__ior__", [](py::object self, const py::handle& other) {
        return merge_op(self, other, cuckoo::MergeMode::max, true);
    }, py::arg("other"));
    cls.def("__or__", [](py::object self, const py::handle& other) {
        return merge_op(self, other, cuckoo::MergeMode::max, false);
    }, py::arg("other"));
    cls.def("__iadd__", [](py::object self, const py::handle& other) {
        return merge_op(self, other, cuckoo::MergeMode::add, true);
    }, py::arg("other"));
    cls.def("__add__", [](py::object self, const py::handle& other) {
        return merge_op(self, other, cuckoo::MergeMode::add, false);
    }, py::arg("other"));
    // Like collections.Counter's &: the smaller count of each fingerprint in its bucket pair.
    cls.def("__iand__", [](py::object self, const py::handle& other) {
        return intersect_op(self, other, true);
    }, py::arg("other"));
    cls.def("__and__", [](py::object self, const py::handle& other) {
        return intersect_op(self, other, false);
    }, py::arg("other"));
    cls.def("intersection", [](const py::object& self, const py::object& other) {
        if (!py::isinstance<PyFilter>(other))
            throw py::type_error("intersection needs a cuckoo.Filter, not " +
                                 py::str(py::type::handle_of(other).attr("__name__")).cast<std::string>());
        return intersect_op(self, other, false);
    }, py::arg("other"),
            "A new filter of the keys (maybe) in both, the same as self & other: each fingerprint keeps the smaller "
            "of its two counts (like collections.Counter's &), so a key added to both is always kept. A key in only "
            "one of them stays when the other has a false positive for it. Needs the same seed, hash algorithm, "
            "bucket size, fingerprint width, bucket layout and capacity: else ValueError naming what differs, "
            "both filters unchanged.");
    cls.def("compact", [](PyFilter& self) {
        WriteLock lock(self);
        return self.core.compact();
    }, "Drop the stages after the first that deletes have emptied; returns how many were dropped.");

    // introspection
    cls.def("bucket_indices", [](const PyFilter& self, const py::handle& key) {
        const uint64_t h = hash_key_or_throw(self.hasher, key);
        ReadLock lock(self);
        const cuckoo::KeyHash k = self.core.first().locate(h);
        return py::make_tuple(k.i1, k.i2, k.fp);
    }, py::arg("key"), "(i1, i2, fingerprint): the key's two candidate buckets and its fingerprint.");
    cls.def("alt_index", [](const PyFilter& self, const py::handle& index, const py::handle& fingerprint) {
        ReadLock lock(self);
        const cuckoo::Filter& first = self.core.first();
        const auto i = static_cast<uint64_t>(int_arg(index, "index", 0, static_cast<long long>(first.bucket_count()) - 1));
        const auto fp = static_cast<uint32_t>(int_arg(fingerprint, "fingerprint", 1, (1ll << first.fingerprint_bits()) - 1));
        return first.alt_index(i, fp);
    }, py::arg("index"), py::arg("fingerprint"), "The other bucket of a fingerprint stored in bucket index.");
    cls.def("stats", [](const PyFilter& self) {
        ReadLock lock(self);
        const cuckoo::InsertStats s = self.core.stats();
        py::dict d;
        d["inserts"] = s.inserts;
        d["failed_inserts"] = s.failed_inserts;
        d["kicked_inserts"] = s.kicked_inserts;
        d["moves"] = s.moves;
        d["buckets_searched"] = s.buckets_searched;
        d["deletes"] = s.deletes;
        return d;
    }, "Counters since creation (or loading): inserts, failed_inserts, kicked_inserts (inserts that moved other fingerprints), moves, buckets_searched, deletes (copies removed).");

    // parameters and statistics
    cls.def_property_readonly("capacity", [](const PyFilter& self) { ReadLock lock(self); return self.core.capacity(); }, "Keys the filter was sized for.");
    cls.def_property_readonly("bucket_count", [](const PyFilter& self) { ReadLock lock(self); return self.core.bucket_count(); });
    cls.def_property_readonly("bucket_size", [](const PyFilter& self) { ReadLock lock(self); return self.core.first().bucket_size(); });
    cls.def_property_readonly("slot_count", [](const PyFilter& self) { ReadLock lock(self); return self.core.slot_count(); });
    cls.def_property_readonly("fingerprint_bits", [](const PyFilter& self) { ReadLock lock(self); return self.core.first().fingerprint_bits(); },
                              "Fingerprint width f (of the first stage; each growth stage adds one bit).");
    cls.def_property_readonly("seed", [](const PyFilter& self) { ReadLock lock(self); return self.core.first().seed(); });
    cls.def_property_readonly("hash_algorithm", [](const PyFilter& self) {
        return std::string(cuckoo::hash_algorithm_name(self.hasher.algorithm));
    }, "The key hash: 'xxh3' or 'xxh64' (fixed for the filter's life, stored in its files).");
    cls.def_property_readonly("max_kicks", [](const PyFilter& self) { ReadLock lock(self); return self.core.first().max_kicks(); });
    cls.def_property_readonly("growable", [](const PyFilter& self) { ReadLock lock(self); return self.core.growable(); });
    cls.def_property_readonly("expansion", [](const PyFilter& self) -> py::object {
        ReadLock lock(self);
        if (!self.core.growable()) return py::none();
        return py::int_(self.core.expansion());
    }, "The growth factor of each new stage (1..4) of a growable filter; None for a fixed filter.");
    cls.def_property_readonly("semi_sort", [](const PyFilter& self) { ReadLock lock(self); return self.core.first().semi_sorted(); },
                              "Whether buckets are semi-sorted (of the first stage; growth stages past 16 fingerprint bits are plain).");
    cls.def_property_readonly("stages", [](const PyFilter& self) {
        ReadLock lock(self);
        py::list out;
        for (const cuckoo::Filter& st : self.core.stages()) {
            py::dict d;
            d["capacity"] = st.capacity();
            d["bucket_count"] = st.bucket_count();
            d["fingerprint_bits"] = st.fingerprint_bits();
            d["semi_sort"] = st.semi_sorted();
            d["items"] = st.size();
            d["load_factor"] = st.load_factor();
            d["nbytes"] = st.table_bytes();
            d["expected_fpr"] = st.expected_fpr();
            out.append(d);
        }
        return out;
    }, "One dict per stage (a fixed filter has one; a growable filter adds one each time it grows).");
    cls.def_property_readonly("load_factor", [](const PyFilter& self) { ReadLock lock(self); return self.core.load_factor(); }, "Stored keys / slots.");
    cls.def_property_readonly("nbytes", [](const PyFilter& self) { ReadLock lock(self); return self.core.table_bytes(); }, "Bytes of the packed table.");
    cls.def_property_readonly("bits_per_item", [](const PyFilter& self) {
        ReadLock lock(self);
        return 8.0 * static_cast<double>(self.core.table_bytes()) / static_cast<double>(self.core.capacity());
    }, "Table bits per key at capacity.");
    cls.def_property_readonly("expected_fpr", [](const PyFilter& self) { ReadLock lock(self); return self.core.expected_fpr(); },
                              "False-positive rate expected at the current load: 1 - (1 - 1/(2^f - 1))^(2 b load).");
    cls.def_property_readonly("fpr_bound", [](const PyFilter& self) { ReadLock lock(self); return self.core.fpr_bound(); },
                              "Upper bound on the false-positive rate, at full load: about 2 b / 2^f.");
    cls.def_property_readonly("read_only", [](const PyFilter& self) { ReadLock lock(self); return !self.core.writable(); });

    register_persistence(cls);
    register_dedup(cls);  // _dedup: the native dedup pipeline (dedup_binding.cpp)

    // For Filter.__init__ (python/cuckoo/_lifecycle.py), which must refuse to run on a built
    // filter: asking any method instead would cost a C++ exception on every construction.
    m.def("_filter_shape", &filter_shape_dict, py::arg("capacity"), py::arg("fpr") = py::none(), py::kw_only(),
          py::arg("fingerprint_bits") = py::none(), py::arg("bucket_size") = 4, py::arg("semi_sort") = false,
          "The shape of Filter(capacity, fpr, ...): bucket_count, bucket_size, fingerprint_bits, semi_sort, "
          "design_load and table_bytes (the core's one sizing rule; cuckoo.theory uses it).");
    m.def("_filter_is_built", [](const py::handle& obj) { return py::isinstance<PyFilter>(obj) && value_is_built(obj.ptr()); },
          py::arg("obj"), "Internal: whether obj is a cuckoo.Filter whose C++ filter exists.");
}

}  // namespace cuckoo_py
