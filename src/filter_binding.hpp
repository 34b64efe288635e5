// The Python object behind cuckoo.Filter: the core filter plus the lock that serialises writers
// against readers. Bulk calls release the GIL, so two threads can be inside one filter at once;
// reads share the lock, writes hold it alone.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <string>

#include "cuckoo/staged.hpp"

namespace cuckoo_py {

namespace py = pybind11;

struct PyFilter {
    explicit PyFilter(cuckoo::StagedFilter f) : core(std::move(f)), hasher(core.hasher()) {}
    PyFilter(const PyFilter& other) : core(other.core), hasher(other.hasher) {}
    // Moves the table: without it, returning a new filter by value (the constructor, copy(),
    // |) would copy the table once more and briefly need twice its memory.
    PyFilter(PyFilter&& other) noexcept
        : core(std::move(other.core)), hasher(other.hasher), backing(std::move(other.backing)) {}

    cuckoo::StagedFilter core;
    // The key hasher (it depends only on the seed, which never changes), kept outside `core` so
    // that keys can be hashed without the lock: core.hasher() reads the stage vector, which a
    // writer in another thread may be reallocating (a growable filter growing, a merge).
    const cuckoo::KeyHasher hasher;
    mutable std::shared_mutex mutex;
    mutable std::mutex writer_gate;              // see ReadLock
    mutable std::atomic<int> waiting_writers{0};
    mutable std::atomic<int> lock_holders{0};    // see alone_with_gil
    // What a read-only table view points into (an mmap object), kept alive with the filter.
    py::object backing;
};

// Whether the Python object `self` (of a bound class, or a subclass) has its C++ value: an object
// made by T.__new__ without __init__ has none.
inline bool value_is_built(PyObject* self) {
    return reinterpret_cast<py::detail::instance*>(self)->get_value_and_holder().holder_constructed();
}
constexpr const char* kFilterNotBuilt =
    "this cuckoo.Filter is not initialised (it was made by Filter.__new__ without __init__)";

// The caster of a bound class whose objects must have their C++ value (see below for PyFilter).
// For an object made by __new__ without __init__, pybind11 would hand a method freshly allocated,
// uninitialised memory (it allocates a missing value lazily), whose mutex then hangs or aborts:
// such an object is refused with a TypeError before any method body runs.
template <class T>
class BuiltOnlyCaster : public py::detail::type_caster_base<T> {
public:
    bool load(py::handle src, bool convert) {
        if (this->typeinfo && src && PyObject_TypeCheck(src.ptr(), this->typeinfo->type) && !value_is_built(src.ptr()))
            throw py::type_error(std::string("this ") + Py_TYPE(src.ptr())->tp_name +
                                 " object is not initialised (it was made by __new__ without __init__)");
        return py::detail::type_caster_base<T>::load(src, convert);
    }
};

}  // namespace cuckoo_py

namespace pybind11 {
namespace detail {

// Every Filter argument, `self` included, is loaded through this caster.
template <>
class type_caster<cuckoo_py::PyFilter> : public cuckoo_py::BuiltOnlyCaster<cuckoo_py::PyFilter> {};

}  // namespace detail
}  // namespace pybind11

namespace cuckoo_py {

// Lock guards that never block while holding the GIL: a thread waiting for the filter must not
// stop the thread inside the filter from re-taking the GIL (for signal checks). The uncontended
// case costs one atomic load and one atomic operation and keeps the GIL.
//
// Writers go first: std::shared_mutex (a glibc rwlock) prefers readers, so threads whose
// contains_many calls keep overlapping would starve add_many forever. A writer that has to wait
// counts itself in `waiting_writers` and holds `writer_gate` until it has the lock; a reader that
// sees a waiting writer passes through the gate first, so it queues behind the writer. Two
// filters read at once must therefore be locked in one global order (ReadLockPair): a reader
// holding one filter and queued behind a writer of the other is then never waited for by that
// writer's readers.
//
// Every holder also counts itself in `lock_holders` (from just after it has the lock to just
// before it lets go), for alone_with_gil.
//
// Any object with the four members `mutex`, `writer_gate`, `waiting_writers` and `lock_holders`
// of PyFilter can be locked this way (the store's Python object is another).
class ReadLock {
public:
    template <class Guarded>
    explicit ReadLock(const Guarded& f) : mutex_(f.mutex), holders_(f.lock_holders) {
        if (f.waiting_writers.load(std::memory_order_acquire) != 0 || !mutex_.try_lock_shared()) {
            py::gil_scoped_release nogil;
            if (f.waiting_writers.load(std::memory_order_acquire) != 0) {
                std::lock_guard<std::mutex> queue_behind_writer(f.writer_gate);
            }
            mutex_.lock_shared();
        }
        holders_.fetch_add(1, std::memory_order_acq_rel);
    }
    ~ReadLock() {
        holders_.fetch_sub(1, std::memory_order_release);
        mutex_.unlock_shared();
    }
    ReadLock(const ReadLock&) = delete;
    ReadLock& operator=(const ReadLock&) = delete;

private:
    std::shared_mutex& mutex_;
    std::atomic<int>& holders_;
};

class WriteLock {
public:
    template <class Guarded>
    explicit WriteLock(const Guarded& f) : mutex_(f.mutex), holders_(f.lock_holders) {
        if (!mutex_.try_lock()) {
            f.waiting_writers.fetch_add(1, std::memory_order_acq_rel);
            {
                py::gil_scoped_release nogil;
                std::lock_guard<std::mutex> gate(f.writer_gate);
                mutex_.lock();
            }
            f.waiting_writers.fetch_sub(1, std::memory_order_acq_rel);
        }
        holders_.fetch_add(1, std::memory_order_acq_rel);
    }
    ~WriteLock() {
        holders_.fetch_sub(1, std::memory_order_release);
        mutex_.unlock();
    }
    WriteLock(const WriteLock&) = delete;
    WriteLock& operator=(const WriteLock&) = delete;

private:
    std::shared_mutex& mutex_;
    std::atomic<int>& holders_;
};

// Whether the calling thread, which holds the GIL, may use the object without its lock until it
// next releases the GIL: true when no thread holds the lock. A thread that takes the lock after
// this check (it waits for it without the GIL) cannot touch the object before it has the GIL
// back: every lock guard returns holding the GIL, and a holder releases the GIL only after its
// constructor counted it. So a short call that runs no Python code and never releases the GIL
// between this check and its last use of the object (a scalar add or lookup) needs no lock.
// Without a GIL (free-threaded CPython) this never holds.
template <class Guarded>
bool alone_with_gil(const Guarded& f) {
#ifdef Py_GIL_DISABLED
    (void)f;
    return false;
#else
    return f.lock_holders.load(std::memory_order_acquire) == 0;
#endif
}

// Read locks on two distinct filters, taken in address order (see ReadLock).
class ReadLockPair {
public:
    ReadLockPair(const PyFilter& x, const PyFilter& y)
        : first_(std::less<const PyFilter*>()(&x, &y) ? x : y), second_(std::less<const PyFilter*>()(&x, &y) ? y : x) {}

private:
    ReadLock first_, second_;
};

using FilterClass = py::class_<PyFilter>;

// The filter behind a Filter object; nullptr with a TypeError set for an object made by
// Filter.__new__ without __init__.
PyFilter* filter_of(PyObject* self);
// Raises FilterFullError for a scalar insert that found no room (the filter is unchanged).
[[noreturn]] void raise_full(const cuckoo::StagedFilter& f);

// Creates cuckoo._core.Filter; the register_* functions below add one concern each.
void register_filter(py::module_& m);
void register_scalar_calls(FilterClass& cls);  // scalar_calls.cpp
void register_persistence(FilterClass& cls);
void register_store(py::module_& m);  // cuckoo._core._Store (store_binding.cpp)  // to_bytes, from_bytes, save/load support (format_binding.cpp)

}  // namespace cuckoo_py
