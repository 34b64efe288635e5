// cuckoo._core._Store, the compiled part of cuckoo.Store (store_binding.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace cuckoo_py {

// Adds _Store and StoreLockedError to the module (on Windows only the exception: the store needs
// POSIX files).
void register_store(pybind11::module_& m);

}  // namespace cuckoo_py
