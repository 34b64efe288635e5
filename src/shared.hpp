// What every bound type of cuckoo._core shares (cuckoo.Filter's PyFilter, filter_binding.hpp, and
// cuckoo.Store's PyStore, store_binding.cpp): the caster that refuses an object whose C++ value
// was never built, the readers-writer lock guards, the interrupt check of long calls that run
// without the GIL, and output arrays. Neither type's header includes the other's.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/numpy.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <string>

#include "signal_check.hpp"

namespace cuckoo_py {

namespace py = pybind11;

// ---- objects made by __new__ without __init__ --------------------------------------------------

// Whether the Python object `self` (of a bound class, or a subclass) has its C++ value: an object
// made by T.__new__ without __init__ has none.
inline bool value_is_built(PyObject* self) {
    return reinterpret_cast<py::detail::instance*>(self)->get_value_and_holder().holder_constructed();
}

// The caster of a bound class whose objects must have their C++ value (specialised as
// pybind11::detail::type_caster<T> next to each such T). For an object made by __new__ without
// __init__, pybind11 would hand a method freshly allocated, uninitialised memory (it allocates a
// missing value lazily), whose mutex then hangs or aborts: such an object is refused with a
// TypeError before any method body runs.
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

// ---- lock guards -------------------------------------------------------------------------------

// The lock of a bound object that bulk calls use without the GIL (so two threads can be inside
// it at once): reads share it, writes hold it alone. A bound type derives from it; see ReadLock.
struct Guarded {
    mutable std::shared_mutex mutex;
    mutable std::mutex writer_gate;              // see ReadLock
    mutable std::atomic<int> waiting_writers{0};
    mutable std::atomic<int> lock_holders{0};    // see alone_with_gil

    Guarded() = default;
    // A copy (Filter.copy()) is a new object with a lock of its own.
    Guarded(const Guarded&) : Guarded() {}
    Guarded& operator=(const Guarded&) = delete;
};

// Lock guards that never block while holding the GIL: a thread waiting for the object must not
// stop the thread inside the object from re-taking the GIL (for signal checks). The uncontended
// case costs one atomic load and one atomic operation and keeps the GIL.
//
// Writers go first: std::shared_mutex (a glibc rwlock) prefers readers, so threads whose
// contains_many calls keep overlapping would starve add_many forever. A writer that has to wait
// counts itself in `waiting_writers` and holds `writer_gate` until it has the lock; a reader that
// sees a waiting writer passes through the gate first, so it queues behind the writer. Two
// objects read at once must therefore be locked in one global order (ReadLockPair): a reader
// holding one object and queued behind a writer of the other is then never waited for by that
// writer's readers.
//
// Every holder also counts itself in `lock_holders` (from just after it has the lock to just
// before it lets go), for alone_with_gil.
class ReadLock {
public:
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
inline bool alone_with_gil(const Guarded& f) {
#ifdef Py_GIL_DISABLED
    (void)f;
    return false;
#else
    return f.lock_holders.load(std::memory_order_acquire) == 0;
#endif
}

// Read locks on two distinct objects, taken in address order (see ReadLock).
class ReadLockPair {
public:
    ReadLockPair(const Guarded& x, const Guarded& y)
        : first_(std::less<const Guarded*>()(&x, &y) ? x : y), second_(std::less<const Guarded*>()(&x, &y) ? y : x) {}

private:
    ReadLock first_, second_;
};

// The interrupt check of long calls without the GIL: SignalCheck, signal_check.hpp.

// ---- results -------------------------------------------------------------------------------------

// A new one-dimensional NumPy array of n elements (uninitialised: the call fills every one).
template <class T>
py::array_t<T> new_array(uint64_t n) {
    return py::array_t<T>(static_cast<py::ssize_t>(n));
}

}  // namespace cuckoo_py
