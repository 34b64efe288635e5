// What every bound type of cuckoo._core shares (cuckoo.Filter's PyFilter, filter_binding.hpp, and
// cuckoo.Store's PyStore, store_binding.cpp): the caster that refuses an object whose C++ value
// was never built, the readers-writer lock guards (locks.hpp), the interrupt check of long calls
// that run without the GIL (signal_check.hpp), and output arrays. Neither type's header includes
// the other's.
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

#include "locks.hpp"
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

// The lock guards (Guarded, ReadLock, WriteLock): locks.hpp.

// The interrupt check of long calls without the GIL: SignalCheck, signal_check.hpp.

// ---- results -------------------------------------------------------------------------------------

// A new one-dimensional NumPy array of n elements (uninitialised: the call fills every one).
template <class T>
py::array_t<T> new_array(uint64_t n) {
    return py::array_t<T>(static_cast<py::ssize_t>(n));
}

}  // namespace cuckoo_py
