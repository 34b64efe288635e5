// The exceptions of the core, in one header that the filter and the store both include (neither
// includes the other for an exception type). The binding maps each to a Python exception of the
// package (src/errors.hpp, src/module.cpp); every other failure of the core is a std exception
// (std::invalid_argument for bad parameters, std::bad_alloc, std::system_error for I/O).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace cuckoo {

// Raised when an insert finds no room within max_kicks. The filter is unchanged by the failed
// insert. In a batch, `inserted` says how many keys of the batch went in before it.
class FilterFullError : public std::runtime_error {
public:
    explicit FilterFullError(const std::string& what, uint64_t inserted = 0)
        : std::runtime_error(what), inserted(inserted) {}
    uint64_t inserted;
};

// Raised by any write to a filter whose table is a read-only view (a memory-mapped file), and to
// a store opened read-only.
class ReadOnlyError : public std::logic_error {
public:
    using std::logic_error::logic_error;
};

// Serialized data that cannot be read: wrong magic, unknown version, truncated, corrupt, or
// parameters that do not describe a valid filter; a store's log corrupt before its synced end.
class FormatError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Why two filters cannot be merged exactly.
class MergeError : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

// A second writer, or a write to a store opened read-only.
class StoreLockedError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A write (or sync, or snapshot) through a store that a parent process opened before fork():
// the child's buffered records and appends would overwrite the parent's.
class StoreForkedError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace cuckoo
