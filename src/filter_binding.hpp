// The Python object behind cuckoo.Filter: the core filter plus the lock that serialises writers
// against readers. Bulk calls release the GIL, so two threads can be inside one filter at once;
// reads share the lock, writes hold it alone.
#pragma once

#include <pybind11/pybind11.h>

#include <shared_mutex>

#include "cuckoo/staged.hpp"

namespace cuckoo_py {

namespace py = pybind11;

struct PyFilter {
    explicit PyFilter(cuckoo::StagedFilter f) : core(std::move(f)) {}
    PyFilter(const PyFilter& other) : core(other.core) {}
    // Moves the table: without it, returning a new filter by value (the constructor, copy(),
    // |) would copy the table once more and briefly need twice its memory.
    PyFilter(PyFilter&& other) noexcept : core(std::move(other.core)), backing(std::move(other.backing)) {}

    cuckoo::StagedFilter core;
    mutable std::shared_mutex mutex;
    // What a read-only table view points into (an mmap object), kept alive with the filter.
    py::object backing;
};

// Lock guards that never block while holding the GIL: a thread waiting for the filter must not
// stop the thread inside the filter from re-taking the GIL (for signal checks). The uncontended
// case costs one atomic operation and keeps the GIL.
class ReadLock {
public:
    explicit ReadLock(const PyFilter& f) : mutex_(f.mutex) {
        if (!mutex_.try_lock_shared()) {
            py::gil_scoped_release nogil;
            mutex_.lock_shared();
        }
    }
    ~ReadLock() { mutex_.unlock_shared(); }
    ReadLock(const ReadLock&) = delete;
    ReadLock& operator=(const ReadLock&) = delete;

private:
    std::shared_mutex& mutex_;
};

class WriteLock {
public:
    explicit WriteLock(const PyFilter& f) : mutex_(f.mutex) {
        if (!mutex_.try_lock()) {
            py::gil_scoped_release nogil;
            mutex_.lock();
        }
    }
    ~WriteLock() { mutex_.unlock(); }
    WriteLock(const WriteLock&) = delete;
    WriteLock& operator=(const WriteLock&) = delete;

private:
    std::shared_mutex& mutex_;
};

using FilterClass = py::class_<PyFilter>;

// Creates cuckoo._core.Filter; the register_* functions below add one concern each.
void register_filter(py::module_& m);
void register_persistence(FilterClass& cls);  // to_bytes, from_bytes, save/load support (format_binding.cpp)

}  // namespace cuckoo_py
