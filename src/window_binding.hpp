// cuckoo._core._Window: the binding of the windowed dedup (cpp/include/cuckoo/window.hpp).
#pragma once

#include <pybind11/pybind11.h>

namespace cuckoo_py {

void register_window(pybind11::module_& m);

}  // namespace cuckoo_py
