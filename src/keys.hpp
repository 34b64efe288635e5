// Python keys -> 64-bit key hashes. The only place that knows how Python objects and buffers
// become keys; the core only ever sees hashes.
//
//   int (and NumPy integer scalars): its value as a 64-bit two's-complement word; must lie in
//       [-2^63, 2^64). Not bool: True and False are refused like boolean arrays (as keys 1 and 0
//       they would be silent collisions with the ints)
//   bytes, bytearray, memoryview (contiguous): their bytes
//   str: its UTF-8 bytes
//
// Bulk inputs become a KeyBatch: either a typed view of a buffer (hashed inside the core's loop,
// without the GIL) or, for Python objects, an array of hashes computed up front with the GIL held.
// Hashing everything before the first change is what keeps the filter unchanged when any key of
// a batch is bad.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/numpy.h>

#include <cstdint>
#include <cstring>
#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuckoo/hash.hpp"
#include "cuckoo/hash_block.hpp"
#include "cuckoo/locate.hpp"
#include "batch_keys.hpp"
#include "key_objects.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace cuckoo_py {

namespace py = pybind11;
using cuckoo::load_le64;

inline std::string type_name(PyObject* o) { return Py_TYPE(o)->tp_name; }

inline uint64_t hash_key_or_throw(const cuckoo::KeyHasher& f, const py::handle& key) {
    uint64_t h;
    if (!hash_object(f, key.ptr(), h)) throw py::error_already_set();
    return h;
}

// ---- batches ----------------------------------------------------------------------------------

// Keys of one bulk call, ready to be hashed without the GIL (KeyLayout, batch_keys.hpp), and the
// Python objects whose buffers it views.
struct KeyBatch : KeyLayout {
    // Keep exported buffers and their objects alive while the GIL is released. Destroyed with
    // the GIL held.
    std::vector<py::buffer_info> held;
    std::vector<py::object> keep_alive;
};

// What a batch of Python objects becomes: their hashes (what a filter needs), or their bytes as
// an owned VarBinary batch (what a store needs: it keeps the keys).
enum class KeyForm { Hashes, Bytes };

// Splits `keys` into batches (one per Arrow chunk; one otherwise), GIL held. Throws
// TypeError/ValueError for bad input before anything is changed. Buffers and Arrow data are
// viewed in place either way.
std::vector<KeyBatch> make_batches(const cuckoo::KeyHasher& f, const py::handle& keys, KeyForm form = KeyForm::Hashes);

inline uint64_t total_size(const std::vector<KeyBatch>& batches) {
    uint64_t n = 0;
    for (const auto& b : batches) n += b.size;
    return n;
}

// ---- keys as byte spans (the store) --------------------------------------------------------------

// The byte spans and hashes of keys [start, start + n) of a batch: int keys are their 8-byte
// little-endian words, 'S' items their bytes before the NUL padding, 'U' items their UTF-8, the
// rest their bytes where they lie. Reused from one chunk of keys to the next.
struct KeySpans {
    std::vector<cuckoo::KeySpan> spans;
    std::vector<uint64_t> hashes;
    std::vector<unsigned char> words;  // int keys' bytes, or 'U' keys' UTF-8
};

// Fills s.spans (not s.hashes) for keys [start, start + n) of `b`, which must carry its keys'
// bytes (made with KeyForm::Bytes). Needs no GIL: reads only what `b` holds.
void fill_spans(const KeyBatch& b, uint64_t start, uint64_t n, KeySpans& s);
// fill_spans, then each span's hash.
void fill_spans_and_hashes(const cuckoo::KeyHasher& hs, const KeyBatch& b, uint64_t start, uint64_t n, KeySpans& s);

// A store's value, by the one rule for values of put() and put_many(): bytes (bytearray, a
// contiguous memoryview) or str (its UTF-8), never an int or None; throws TypeError/ValueError.
// GIL held; `out` borrows from `value`.
void value_bytes(const py::handle& value, KeyBytes& out);

// The values of a bulk put, as one flat array of spans in key order (values that are not bytes
// lying in a buffer already are copied into `arena`); `source` and `batches` hold what they view.
struct ValueSpans {
    py::object source;  // the values as checked (an iterable read into a list)
    std::vector<KeyBatch> batches;
    std::vector<cuckoo::KeySpan> spans;
    std::vector<unsigned char> arena;
};
// Converts `values` (a batch of bytes or str: items checked one by one, arrays by their kind)
// into `v`; throws TypeError for a value that is not one, ValueError unless there are exactly
// `expected` of them. GIL held.
void collect_values(const cuckoo::KeyHasher& hs, const py::handle& values, uint64_t expected, ValueSpans& v);

// ---- inside the conversion (keys.cpp, keys_arrow.cpp) ---------------------------------------------

// Points a batch of owned bytes (owned_offsets, owned_data) at its storage.
void finish_owned(KeyBatch& b);
// Validates the offsets of a VarBinary batch before any loop reads through them: never read
// outside var_data[0, var_data_size). Throws ValueError naming the first bad offset.
void check_var_binary(const KeyBatch& b);
// The batches of an object exporting __arrow_c_stream__ (one or more per chunk) or
// __arrow_c_array__: the Arrow C data interface reader (keys_arrow.cpp).
std::vector<KeyBatch> batches_of_arrow_stream(const cuckoo::KeyHasher& f, const py::handle& keys, KeyForm form);
std::vector<KeyBatch> batches_of_arrow_array(const cuckoo::KeyHasher& f, const py::handle& keys, KeyForm form);

// Adds cuckoo._core._set_input_adapter, through which the package hands over its adapter for
// pandas and pyarrow inputs (see make_batches).
void register_keys(py::module_& m);

}  // namespace cuckoo_py
