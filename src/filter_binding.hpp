// The Python object behind cuckoo.Filter (PyFilter: FilterState, filter_state.hpp, and its Python
// parts) and the functions that bind it.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/numpy.h>

#include <string>
#include <utility>
#include <vector>

#include "cuckoo/staged.hpp"
#include "filter_state.hpp"
#include "shared.hpp"

namespace cuckoo_py {

namespace py = pybind11;

// FilterState (filter_state.hpp) and the Python object the filter's table may live in.
struct PyFilter : FilterState {
    explicit PyFilter(cuckoo::StagedFilter f) : FilterState(std::move(f)) {}
    // A copy owns its table: nothing to keep alive.
    PyFilter(const PyFilter& other) : FilterState(other) {}
    // Moves the table: without it, returning a new filter by value (the constructor, copy(),
    // |) would copy the table once more and briefly need twice its memory.
    PyFilter(PyFilter&& other) noexcept : FilterState(std::move(other)), backing(std::move(other.backing)) {}

    // What a read-only table view points into (an mmap object), kept alive with the filter.
    py::object backing;
};

constexpr const char* kFilterNotBuilt =
    "this cuckoo.Filter is not initialised (it was made by Filter.__new__ without __init__)";

}  // namespace cuckoo_py

namespace pybind11 {
namespace detail {

// Every Filter argument, `self` included, is loaded through this caster (shared.hpp).
template <>
class type_caster<cuckoo_py::PyFilter> : public cuckoo_py::BuiltOnlyCaster<cuckoo_py::PyFilter> {};

}  // namespace detail
}  // namespace pybind11

namespace cuckoo_py {

using FilterClass = py::class_<PyFilter>;


// Creates cuckoo._core.Filter; the register_* functions below add one concern each.
void register_filter(py::module_& m);
void register_persistence(FilterClass& cls);  // to_bytes, from_bytes, save/load support (format_binding.cpp)
void register_dedup(FilterClass& cls);  // _dedup, the native dedup pipeline (dedup_binding.cpp)
void register_dedup_exact(py::module_& m);  // _dedup_exact, its exact path (dedup_binding.cpp)
void register_json_keys(py::module_& m);    // _json_key: test hook of the JSONL framing (record_keys_binding.cpp)
void register_csv_fields(py::module_& m);   // test hooks of the CSV and field framings (record_keys_binding.cpp)

// The bulk calls (filter_bulk_binding.cpp; their loops: filter_bulk.hpp).
struct KeyBatch;
// A bool array, whether each key is (maybe) present.
py::array_t<bool> contains_many(const PyFilter& self, const py::handle& keys);
// count(key) for each key, saturating at 255.
py::array_t<uint8_t> count_many(const PyFilter& self, const py::handle& keys);
// Discards each key in order; True where a copy was removed.
py::array_t<bool> discard_many(PyFilter& self, const py::handle& keys);
// Inserts every batch in order and returns the number of keys handled; raises FilterFullError
// at the first key that finds no room. `was_new` (may be null): see cuckoo::Filter::insert_batch.
uint64_t insert_batches(PyFilter& self, const std::vector<KeyBatch>& batches, cuckoo::Filter::InsertMode mode,
                        bool* was_new);

// Why the last insert into `f` failed, as the start of a FilterFullError message, and its
// `reason` attribute.
std::pair<std::string, const char*> failure_text(const cuckoo::StagedFilter& f);
// Raises the FilterFullError of a batch that stopped after `done` of `total` keys; `why`:
// failure_text, taken while the batch still held the write lock.
[[noreturn]] void raise_full_in_batch(const std::pair<std::string, const char*>& why, uint64_t done, uint64_t total);

}  // namespace cuckoo_py
