// How much memory a new allocation can use without over-committing: checked before a large
// table is allocated (a new filter in the binding, every new stage of a growable filter here).
//
// Linux over-commits: aligned_alloc of a table bigger than the free memory can succeed, and the
// memset that zeroes it then makes the kernel's OOM killer end the process (a crash, not an
// exception). So a table is compared with the memory the system reports as available
// (MemAvailable: free memory plus what can be reclaimed without swapping, plus free swap) first.
#pragma once

#include <cstdint>
#include <cstdio>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace cuckoo {

// Tables smaller than this are not checked: they cannot be what exhausts a machine.
constexpr uint64_t kMemoryCheckMinBytes = uint64_t(64) << 20;

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

// Whether a table of `bytes` fits in the memory available now (small tables always do).
inline bool memory_available_for(uint64_t bytes) {
    if (bytes < kMemoryCheckMinBytes) return true;
    const uint64_t avail = available_memory_bytes();
    return avail == 0 || bytes <= avail;
}

}  // namespace cuckoo
