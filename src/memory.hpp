// A check made before allocating a large table: is there memory for it at all?
//
// Linux over-commits: aligned_alloc of a table bigger than the free memory can succeed, and the
// memset that zeroes it then makes the kernel's OOM killer end the process (a crash, not an
// exception). So a new filter's table is compared with the memory the system reports as
// available (MemAvailable: free memory plus what can be reclaimed without swapping, plus free
// swap) before it is allocated, and a request that cannot fit raises MemoryError instead.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace cuckoo_py {

// Bytes of memory a new allocation can use without over-committing, or 0 if unknown.
inline uint64_t available_memory_bytes() {
#if defined(__linux__)
    if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
        char line[256];
        uint64_t avail_kb = 0, swap_kb = 0;
        bool have_avail = false;
        while (std::fgets(line, sizeof line, f)) {
            unsigned long long kb = 0;
            if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                avail_kb = kb;
                have_avail = true;
            } else if (std::sscanf(line, "SwapFree: %llu kB", &kb) == 1) {
                swap_kb = kb;
            }
        }
        std::fclose(f);
        if (have_avail) return (avail_kb + swap_kb) * 1024;
    }
#endif
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
#endif
    return 0;
}

inline std::string gib(uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
    return buf;
}

// Raises MemoryError if a table of `bytes` cannot fit in the memory available now. Small
// requests (under 64 MiB) are not checked: they cannot be what exhausts a machine.
inline void require_memory(uint64_t bytes, const std::string& what) {
    if (bytes < (uint64_t(64) << 20)) return;
    const uint64_t avail = available_memory_bytes();
    if (avail == 0 || bytes <= avail) return;
    PyErr_SetString(PyExc_MemoryError, (what + " needs " + gib(bytes) + " for its table, but only " + gib(avail) +
                                        " of memory is available")
                                           .c_str());
    throw py::error_already_set();
}

}  // namespace cuckoo_py
