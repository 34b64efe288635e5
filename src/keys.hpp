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

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace cuckoo_py {

namespace py = pybind11;
using cuckoo::load_le64;

inline std::string type_name(PyObject* o) { return Py_TYPE(o)->tp_name; }

// Converts a Python int (or an object with __index__) to its 64-bit word. Sets a Python error
// and returns false when it is not an integer or lies outside [-2^63, 2^64).
inline bool int_key_value(PyObject* key, uint64_t& out) {
    PyObject* num = key;
    bool owned = false;
    if (!PyLong_Check(key)) {
        num = PyNumber_Index(key);
        if (!num) return false;
        owned = true;
    }
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(num, &overflow);
    bool ok = true;
    if (overflow == 0) {
        if (v == -1 && PyErr_Occurred()) ok = false;
        out = static_cast<uint64_t>(v);
    } else if (overflow > 0) {
        const unsigned long long u = PyLong_AsUnsignedLongLong(num);
        if (u == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "int key out of range: keys must fit in 64 bits ([-2**63, 2**64))");
            ok = false;
        }
        out = u;
    } else {
        PyErr_SetString(PyExc_ValueError, "int key out of range: keys must fit in 64 bits ([-2**63, 2**64))");
        ok = false;
    }
    if (owned) Py_DECREF(num);
    return ok;
}

// The bytes of one Python key: what its hash is computed from, and what a store keeps. An int
// key is its 8-byte little-endian two's-complement word (so it hashes like the 8-byte key of
// the same bytes, as the format promises).
struct KeyBytes {
    const unsigned char* data = nullptr;
    size_t len = 0;
    unsigned char word[8];
    Py_buffer view;
    bool has_view = false;

    KeyBytes() = default;
    KeyBytes(const KeyBytes&) = delete;
    KeyBytes& operator=(const KeyBytes&) = delete;
    ~KeyBytes() {
        if (has_view) PyBuffer_Release(&view);
    }
};

// Fills `out` with the bytes of `key`; sets a Python error (TypeError/ValueError) and returns
// false on bad input. Callable only with the GIL held; `out` borrows from `key`.
inline bool key_bytes_of_object(PyObject* key, KeyBytes& out) {
    // ints first, and NumPy integer scalars and other integer-like types (__index__) last
    auto int_key = [&] {
        uint64_t v;
        if (!int_key_value(key, v)) return false;
        cuckoo::store_le64(out.word, v);
        out.data = out.word;
        out.len = 8;
        return true;
    };
    if (PyLong_Check(key)) {
        if (PyBool_Check(key)) {  // as hash_object refuses them (a store's and a window's keys too)
            PyErr_SetString(PyExc_TypeError, "bool keys are not supported: keys must be int, bytes or str (use int(flag))");
            return false;
        }
        return int_key();
    }
    if (PyUnicode_Check(key)) {
        Py_ssize_t len;
        const char* s = PyUnicode_AsUTF8AndSize(key, &len);  // cached on the str object
        if (!s) return false;  // UnicodeEncodeError (a ValueError): lone surrogates
        out.data = reinterpret_cast<const unsigned char*>(s);
        out.len = static_cast<size_t>(len);
        return true;
    }
    if (PyBytes_Check(key)) {
        out.data = reinterpret_cast<const unsigned char*>(PyBytes_AS_STRING(key));
        out.len = static_cast<size_t>(PyBytes_GET_SIZE(key));
        return true;
    }
    if (PyByteArray_Check(key)) {
        out.data = reinterpret_cast<const unsigned char*>(PyByteArray_AS_STRING(key));
        out.len = static_cast<size_t>(PyByteArray_GET_SIZE(key));
        return true;
    }
    if (PyMemoryView_Check(key)) {
        if (PyObject_GetBuffer(key, &out.view, PyBUF_C_CONTIGUOUS) != 0) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ValueError, "a memoryview key must be C-contiguous (use .tobytes())");
            return false;
        }
        out.has_view = true;
        out.data = static_cast<const unsigned char*>(out.view.buf);
        out.len = static_cast<size_t>(out.view.len);
        return true;
    }
    if (key == Py_None) {
        PyErr_SetString(PyExc_TypeError, "None is not a valid key: keys must be int, bytes or str");
        return false;
    }
    if (PyFloat_Check(key)) {
        PyErr_SetString(PyExc_TypeError, "float keys are not supported: keys must be int, bytes or str");
        return false;
    }
    if (PyIndex_Check(key)) return int_key();
    PyErr_Format(PyExc_TypeError, "keys must be int, bytes or str, not %.200s", Py_TYPE(key)->tp_name);
    return false;
}

// Hash of one Python key; sets a Python error (TypeError/ValueError) and returns false on bad
// input. Callable only with the GIL held. The common types are hashed in place; the rest goes
// through key_bytes_of_object.
inline bool hash_object(const cuckoo::KeyHasher& f, PyObject* key, uint64_t& out) {
    if (PyLong_Check(key)) {
        if (PyBool_Check(key)) {
            PyErr_SetString(PyExc_TypeError, "bool keys are not supported: keys must be int, bytes or str (use int(flag))");
            return false;
        }
        uint64_t v;
        if (!int_key_value(key, v)) return false;
        out = f.hash_int(v);
        return true;
    }
    if (PyUnicode_Check(key)) {
        Py_ssize_t len;
        const char* s = PyUnicode_AsUTF8AndSize(key, &len);  // cached on the str object
        if (!s) return false;  // UnicodeEncodeError (a ValueError): lone surrogates
        out = f.hash_one_key(s, static_cast<size_t>(len));
        return true;
    }
    if (PyBytes_Check(key)) {
        out = f.hash_one_key(PyBytes_AS_STRING(key), static_cast<size_t>(PyBytes_GET_SIZE(key)));
        return true;
    }
    KeyBytes bytes;
    if (!key_bytes_of_object(key, bytes)) return false;
    out = f.hash_one_key(bytes.data, bytes.len);
    return true;
}

inline uint64_t hash_key_or_throw(const cuckoo::KeyHasher& f, const py::handle& key) {
    uint64_t h;
    if (!hash_object(f, key.ptr(), h)) throw py::error_already_set();
    return h;
}

template <class T>
T byteswap_value(T v) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &v, sizeof v);
    for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
    std::memcpy(&v, b, sizeof v);
    return v;
}

inline size_t encode_utf8(uint32_t c, unsigned char* o) {
    if (c < 0x80) { o[0] = static_cast<unsigned char>(c); return 1; }
    if (c < 0x800) {
        o[0] = static_cast<unsigned char>(0xC0 | (c >> 6));
        o[1] = static_cast<unsigned char>(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = static_cast<unsigned char>(0xE0 | (c >> 12));
        o[1] = static_cast<unsigned char>(0x80 | ((c >> 6) & 0x3F));
        o[2] = static_cast<unsigned char>(0x80 | (c & 0x3F));
        return 3;
    }
    o[0] = static_cast<unsigned char>(0xF0 | (c >> 18));
    o[1] = static_cast<unsigned char>(0x80 | ((c >> 12) & 0x3F));
    o[2] = static_cast<unsigned char>(0x80 | ((c >> 6) & 0x3F));
    o[3] = static_cast<unsigned char>(0x80 | (c & 0x3F));
    return 4;
}

// ---- batches ----------------------------------------------------------------------------------

enum class BufferKind {
    Int,      // integers of 1, 2, 4 or 8 bytes, signed or unsigned, either byte order
    Bytes,    // NumPy 'S': fixed-width bytes, trailing NULs are padding
    Unicode,  // NumPy 'U': fixed-width UCS4, trailing NULs are padding; hashed as UTF-8
    Hashes,   // precomputed key hashes (from Python objects)
    VarBinary // Arrow-style offsets + data
};

// Keys of one bulk call, ready to be hashed without the GIL. Holds the buffers it views.
struct KeyBatch {
    BufferKind kind = BufferKind::Hashes;
    uint64_t size = 0;
    // Int / Bytes / Unicode: element k at data + k * stride
    const unsigned char* data = nullptr;
    Py_ssize_t stride = 0;
    Py_ssize_t itemsize = 0;
    bool is_signed = false;
    bool swap_bytes = false;
    // VarBinary: key k is var_data[offsets[k] .. offsets[k + 1]) (offsets of 4 or 8 bytes)
    const unsigned char* var_offsets = nullptr;
    unsigned offset_width = 8;
    const unsigned char* var_data = nullptr;
    uint64_t var_data_size = 0;  // bytes of var_data that may be read (its buffer's length)
    // Hashes
    std::vector<uint64_t> hashes;
    // VarBinary built from Python objects (make_batches with KeyForm::Bytes): the storage that
    // var_offsets / var_data point into
    std::vector<unsigned char> owned_data;
    std::vector<int64_t> owned_offsets;
    // Keep exported buffers and their objects alive while the GIL is released. Destroyed with
    // the GIL held.
    std::vector<py::buffer_info> held;
    std::vector<py::object> keep_alive;
};

// Integer keys of one dtype in a buffer, as a key source for the core's bulk loops: key k's value
// is its integer (sign-extended for signed types, zero-extended otherwise), hashed like a Python
// int. hash_block gathers a block's values into an array and hashes them together with the
// vectorized cuckoo::hash_u64_block.
template <class T>
struct IntKeys {
    static constexpr bool kVectorHashBlock = true;  // hash_ints_block: see cuckoo::vector_hash_block
    cuckoo::KeyHasher hasher;
    const unsigned char* base;
    Py_ssize_t stride;
    bool swap;

    uint64_t value(uint64_t k) const {
        T v;
        std::memcpy(&v, base + static_cast<Py_ssize_t>(k) * stride, sizeof v);
        if (swap) v = byteswap_value(v);
        if constexpr (std::is_signed<T>::value) return static_cast<uint64_t>(static_cast<int64_t>(v));
        else return static_cast<uint64_t>(v);
    }
    uint64_t operator()(uint64_t k) const { return hasher.hash_int(value(k)); }
    void hash_block(uint64_t start, unsigned len, uint64_t* out) const {
        // Contiguous, aligned, native-order 64-bit values are hashed where they lie (the common
        // uint64/int64 array); other layouts are gathered into a block of values first.
        if (sizeof(T) == 8 && stride == 8 && !swap && reinterpret_cast<uintptr_t>(base) % alignof(uint64_t) == 0) {
            cuckoo::hash_ints_block(hasher, reinterpret_cast<const uint64_t*>(base) + start, len, out);
            return;
        }
        uint64_t values[cuckoo::kBatchBlock];
        for (unsigned done = 0; done < len; done += cuckoo::kBatchBlock) {
            const unsigned part = std::min(len - done, cuckoo::kBatchBlock);
            for (unsigned j = 0; j < part; ++j) values[j] = value(start + done + j);
            cuckoo::hash_ints_block(hasher, values, part, out + done);
        }
    }
};

// Integer keys of a dtype narrower than 64 bits (int8 .. uint32), as one key source type: the
// core's bulk loops are compiled once per key source type, and six integer types meant six copies
// of every loop (a large share of the build). The dtype is chosen once per block (hash_block) or
// per key (operator(), value: the rare paths), then read as IntKeys<T> reads it.
struct NarrowIntKeys {
    static constexpr bool kVectorHashBlock = true;
    cuckoo::KeyHasher hasher;
    const unsigned char* base;
    Py_ssize_t stride;
    bool swap;
    Py_ssize_t itemsize;  // 1, 2 or 4
    bool is_signed;

    template <class Fn>
    auto with_dtype(Fn&& fn) const {
        auto as = [&](auto tag) { return fn(IntKeys<decltype(tag)>{hasher, base, stride, swap}); };
        if (is_signed) {
            switch (itemsize) {
                case 1: return as(int8_t{});
                case 2: return as(int16_t{});
                default: return as(int32_t{});
            }
        }
        switch (itemsize) {
            case 1: return as(uint8_t{});
            case 2: return as(uint16_t{});
            default: return as(uint32_t{});
        }
    }
    uint64_t value(uint64_t k) const {
        return with_dtype([k](const auto& keys) { return keys.value(k); });
    }
    uint64_t operator()(uint64_t k) const { return hasher.hash_int(value(k)); }
    void hash_block(uint64_t start, unsigned len, uint64_t* out) const {
        with_dtype([&](const auto& keys) { keys.hash_block(start, len, out); });
    }
};

// NumPy 'S' keys (fixed width, trailing NULs are padding) as a key source. hash_block hashes a
// block at once with the core's vector kernel when the items are contiguous and at most 32 bytes
// wide (the kernel reads whole 32-byte rows, so it must know where the array ends).
struct PaddedBytesKeys {
    cuckoo::KeyHasher hasher;
    const unsigned char* base;
    Py_ssize_t stride;
    Py_ssize_t width;
    uint64_t count;

    uint64_t operator()(uint64_t k) const {
        const unsigned char* p = base + static_cast<Py_ssize_t>(k) * stride;
        return hasher.hash_key(p, cuckoo::unpadded_size(p, static_cast<size_t>(width)));
    }
    void hash_block(uint64_t start, unsigned len, uint64_t* out) const {
        if (stride == width) {
            cuckoo::hash_padded_block(hasher, base + start * static_cast<uint64_t>(width), static_cast<size_t>(width),
                                      len, base + count * static_cast<uint64_t>(width), out);
            return;
        }
        for (unsigned j = 0; j < len; ++j) out[j] = (*this)(start + j);
    }
};

// Offset k of an Arrow offsets buffer (int32 or int64; the buffer may be unaligned).
template <class Offset>
Offset offset_at(const unsigned char* offsets, uint64_t k) {
    Offset o;
    std::memcpy(&o, offsets + sizeof(Offset) * k, sizeof o);
    return o;
}

// Arrow-style keys (offsets of type Offset into a data buffer) as a key source: key k is
// data[offsets[k] .. offsets[k + 1]). hash_block hashes a block at once with the core's vector
// kernel, which may read up to 32 bytes from a key's start but never past the data buffer.
template <class Offset>
struct VarBinaryKeys {
    cuckoo::KeyHasher hasher;
    const unsigned char* offsets;
    const unsigned char* data;
    const unsigned char* data_end;

    Offset offset(uint64_t k) const { return offset_at<Offset>(offsets, k); }
    uint64_t operator()(uint64_t k) const {
        const Offset begin = offset(k);
        return hasher.hash_key(data + begin, static_cast<size_t>(offset(k + 1) - begin));
    }
    void hash_block(uint64_t start, unsigned len, uint64_t* out) const {
        // Each offset is read where it lies. (Copying a block's offsets into an array first, with
        // one memcpy of variable size, made the reads of the copy wait for its wide stores: store-
        // to-load forwarding fails on them. That cost ~2 ns a key, a sixth of a lookup of 8-32-byte
        // keys at 10^6 keys: C++ harness, min of 15 alternating runs, 13.2 -> 11.2 ns.)
        const unsigned char* key[cuckoo::kBatchBlock];
        uint32_t key_len[cuckoo::kBatchBlock];
        for (unsigned done = 0; done < len; done += cuckoo::kBatchBlock) {
            const unsigned part = std::min(len - done, cuckoo::kBatchBlock);
            bool fits = true;  // key lengths as 32 bits (longer keys: one at a time)
            Offset begin = offset(start + done);
            for (unsigned j = 0; j < part; ++j) {
                const Offset end = offset(start + done + j + 1);
                const uint64_t l = static_cast<uint64_t>(end - begin);
                key[j] = data + begin;
                key_len[j] = static_cast<uint32_t>(l);
                fits &= l <= UINT32_MAX;
                begin = end;
            }
            if (fits) {
                cuckoo::hash_bytes_block(hasher, key, key_len, part, data_end, out + done);
            } else {
                for (unsigned j = 0; j < part; ++j) out[done + j] = (*this)(start + done + j);
            }
        }
    }
};

// Runs fn(hash_at) with a hash_at(k) -> uint64_t specialised for the batch's layout: the
// dispatch on dtype happens once per call, not once per key.
template <class Fn>
auto with_hasher(const cuckoo::KeyHasher& f, const KeyBatch& b, Fn&& fn) {
    switch (b.kind) {
        case BufferKind::Hashes: {
            const uint64_t* h = b.hashes.data();
            return fn([h](uint64_t k) { return h[k]; });
        }
        case BufferKind::Int:
            // int64 and uint64 keys share IntKeys<uint64_t>: both are their 64-bit word.
            if (b.itemsize == 8) return fn(IntKeys<uint64_t>{f, b.data, b.stride, b.swap_bytes});
            return fn(NarrowIntKeys{f, b.data, b.stride, b.swap_bytes, b.itemsize, b.is_signed});
        case BufferKind::Bytes:
            return fn(PaddedBytesKeys{f, b.data, b.stride, b.itemsize, b.size});
        case BufferKind::Unicode: {
            const unsigned char* base = b.data;
            const Py_ssize_t stride = b.stride, chars = b.itemsize / 4;
            const bool swap = b.swap_bytes;
            // UTF-8 needs at most 4 bytes per code point, the width of one UCS4 unit.
            std::vector<unsigned char> scratch(static_cast<size_t>(chars) * 4 + 4);
            unsigned char* out = scratch.data();
            return fn([f, base, stride, chars, swap, out](uint64_t k) {
                const unsigned char* p = base + static_cast<Py_ssize_t>(k) * stride;
                Py_ssize_t n = chars;
                auto cp_at = [&](Py_ssize_t i) {
                    uint32_t c;
                    std::memcpy(&c, p + 4 * i, 4);
                    return swap ? byteswap_value(c) : c;
                };
                while (n > 0 && cp_at(n - 1) == 0) --n;
                size_t len = 0;
                for (Py_ssize_t i = 0; i < n; ++i) len += encode_utf8(cp_at(i), out + len);
                return f.hash_key(out, len);
            });
        }
        case BufferKind::VarBinary:
        default: {
            const unsigned char* data_end = b.var_data + b.var_data_size;
            if (b.offset_width == 4) return fn(VarBinaryKeys<int32_t>{f, b.var_offsets, b.var_data, data_end});
            return fn(VarBinaryKeys<int64_t>{f, b.var_offsets, b.var_data, data_end});
        }
    }
}

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
