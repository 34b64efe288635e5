// The readers-writer lock of a bound object whose bulk calls run without the GIL (Guarded), and
// its guards. Uses only the C API, not pybind11: the scalar calls (scalar_calls.cpp, a unit that
// includes no pybind11) take these locks too.
#pragma once

#include <Python.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <shared_mutex>

namespace cuckoo_py {

// Releases the GIL for its lifetime, for a guard that waits for the lock: what pybind11's
// gil_scoped_release does once pybind11's internals exist (the module made them when it loaded).
class GilReleased {
public:
    GilReleased() : state_(PyEval_SaveThread()) {}
    ~GilReleased() { PyEval_RestoreThread(state_); }
    GilReleased(const GilReleased&) = delete;
    GilReleased& operator=(const GilReleased&) = delete;

private:
    PyThreadState* state_;
};

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
            const GilReleased nogil;
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
                const GilReleased nogil;
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

}  // namespace cuckoo_py
