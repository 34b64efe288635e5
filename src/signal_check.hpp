// The interrupt check of every long call that runs without the GIL (the filter's bulk loops, the
// store's chunk loops). Free of pybind11, like batch_keys.hpp, because the bulk loop units call it
// from inside their loops; the part that takes the GIL back (look) is compiled once, in
// module.cpp, and runs at most every kSignalCheckInterval.
#pragma once

#include <Python.h>  // PyThread_get_thread_ident: the C API header, not pybind11

#include <chrono>
#include <cstdint>

namespace cuckoo_py {

// threading.main_thread().ident, set once when the module loads (init_signal_check, module.cpp):
// only the main thread runs Python's signal handlers.
inline unsigned long main_thread_ident = 0;

// How many times SignalCheck has taken the GIL back (read and reset under the GIL by
// _core._signal_checks(), for tests/test_threads_gil.py: a call's looks must follow the clock).
inline uint64_t signal_checks_taken = 0;

// How often a long call without the GIL looks at the signals: Ctrl-C must stop it within
// ~100 ms. The clock decides, not a count of steps: each look takes the GIL back, and a busy
// Python thread holds the GIL for up to the switch interval (5 ms) before handing it over. A
// look every 512 blocks (~16k keys, well under a millisecond) made contains_many of 2*10^7 keys
// 4.4x slower beside a spinning thread (issue 28); one look per 50 ms costs at most ~10% there
// and nothing measurable alone.
constexpr std::chrono::milliseconds kSignalCheckInterval{50};

// Filter bulk loops read the clock every this many blocks of keys (~512 keys, a few
// microseconds of work; a clock read costs ~20 ns).
constexpr uint64_t kBlocksPerClockRead = 16;

// The interrupt check of every long call that runs without the GIL (the filter's bulk loops, the
// store's chunk loops), called between its steps. On the main thread it reads the clock every
// `period` calls and, once kSignalCheckInterval has passed since the call began or the last
// look, re-takes the GIL to run Python's signal handlers; if one raised (KeyboardInterrupt), it
// returns true, the call stops after the step it finished, and the exception stays set until
// the call, holding the GIL again, raises it (raise_if_interrupted). Only the main thread runs
// signal handlers, so elsewhere it never takes the GIL.
class SignalCheck {
public:
    explicit SignalCheck(uint64_t period = kBlocksPerClockRead)
        : on_main_thread_(PyThread_get_thread_ident() == main_thread_ident),
          period_(period),
          next_look_(std::chrono::steady_clock::now() + kSignalCheckInterval) {}
    bool operator()() {
        if (!on_main_thread_ || ++steps_ % period_ != 0) return false;
        const auto now = std::chrono::steady_clock::now();
        if (now < next_look_) return false;
        return look();
    }
    bool interrupted() const { return interrupted_; }
    // Throws the pending KeyboardInterrupt (pybind11's error_already_set) if a look found one.
    // GIL held.
    void raise_if_interrupted() const;

private:
    // Takes the GIL back to run the signal handlers, then schedules the next look (module.cpp).
    bool look();

    bool on_main_thread_;
    uint64_t period_;
    std::chrono::steady_clock::time_point next_look_;
    bool interrupted_ = false;
    uint64_t steps_ = 0;
};

}  // namespace cuckoo_py
