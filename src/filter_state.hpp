// The C++ state of a cuckoo.Filter object (FilterState: the core filter, its key hasher, its
// lock) and what the scalar calls need besides. Free of pybind11: the scalar calls
// (scalar_calls.cpp, a unit of its own) include this, not filter_binding.hpp, so that they do not
// compile pybind11's inline code (~4-5 CPU-s). PyFilter (filter_binding.hpp) adds the Python parts.
#pragma once

#include <Python.h>

#include <utility>

#include "cuckoo/staged.hpp"
#include "locks.hpp"

namespace cuckoo_py {

// The core filter plus the lock that serialises writers against readers (Guarded, locks.hpp).
// Bulk calls release the GIL, so two threads can be inside one filter at once; reads share the
// lock, writes hold it alone. A copy gets a lock of its own.
struct FilterState : Guarded {
    explicit FilterState(cuckoo::StagedFilter f) : core(std::move(f)), hasher(core.hasher()) {}
    FilterState(const FilterState& other) : core(other.core), hasher(other.hasher) {}
    FilterState(FilterState&& other) noexcept : core(std::move(other.core)), hasher(other.hasher) {}

    cuckoo::StagedFilter core;
    // The key hasher (it depends only on the seed, which never changes), kept outside `core` so
    // that keys can be hashed without the lock: core.hasher() reads the stage vector, which a
    // writer in another thread may be reallocating (a growable filter growing, a merge).
    const cuckoo::KeyHasher hasher;
};

// Defined in filter_binding.cpp, where pybind11 is at hand:
// The filter behind a Filter object; nullptr with a TypeError set for an object made by
// Filter.__new__ without __init__.
FilterState* filter_of(PyObject* self);
// Raises FilterFullError for a scalar insert that found no room (the filter is unchanged).
[[noreturn]] void raise_full(const cuckoo::StagedFilter& f);
// Inside a catch block: sets the Python error for the exception being handled, as pybind11 does
// for a bound function (an error_already_set restored; anything else through the module's
// exception translators, then pybind11's).
void set_python_error_from_exception();

// Adds the scalar calls (add, add_unique, discard, remove, count, __contains__ and the `in`
// slot) to the Filter type (scalar_calls.cpp). False with a Python error set if that failed.
bool register_scalar_calls(PyTypeObject* type);

}  // namespace cuckoo_py
