// A check made before allocating a large table: is there memory for it at all? The measure is
// the core's (cuckoo/memory.hpp, also used for every new stage of a growable filter); a request
// that cannot fit raises MemoryError here instead of allocating.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "cuckoo/memory.hpp"

namespace cuckoo_py {

inline std::string gib(uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
    return buf;
}

// Raises MemoryError if a table of `bytes` cannot fit in the memory available now. Small
// requests (under 64 MiB) are not checked: they cannot be what exhausts a machine.
inline void require_memory(uint64_t bytes, const std::string& what) {
    if (cuckoo::memory_available_for(bytes)) return;
    const uint64_t avail = cuckoo::available_memory_bytes();
    PyErr_SetString(PyExc_MemoryError, (what + " needs " + gib(bytes) + " for its table, but only " + gib(avail) +
                                        " of memory is available")
                                           .c_str());
    throw py::error_already_set();
}

}  // namespace cuckoo_py
