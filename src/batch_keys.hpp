// Where the keys of one bulk call lie and how the core's batch loops read them (KeyLayout,
// with_hasher). Free of pybind11 on purpose: the units that instantiate those loops for every
// layout (filter_bulk_*.cpp) include only this and the core, so that none of them also compiles
// pybind11's inline code (~4-5 CPU-s a unit). Turning Python objects into a layout is keys.hpp's
// job (KeyBatch, make_batches).
#pragma once

#include <Python.h>  // Py_ssize_t only: the C API header, not pybind11

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "cuckoo/hash.hpp"
#include "cuckoo/hash_block.hpp"
#include "cuckoo/locate.hpp"

namespace cuckoo_py {

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

enum class BufferKind {
    Int,      // integers of 1, 2, 4 or 8 bytes, signed or unsigned, either byte order
    Bytes,    // NumPy 'S': fixed-width bytes, trailing NULs are padding
    Unicode,  // NumPy 'U': fixed-width UCS4, trailing NULs are padding; hashed as UTF-8
    Hashes,   // precomputed key hashes (from Python objects)
    VarBinary // Arrow-style offsets + data
};

// The keys of one bulk call as the loops see them: a typed view of a buffer, an Arrow-style
// pair of buffers, or hashes computed up front. KeyBatch (keys.hpp) adds the Python objects that
// keep the viewed buffers alive.
struct KeyLayout {
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
auto with_hasher(const cuckoo::KeyHasher& f, const KeyLayout& b, Fn&& fn) {
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

}  // namespace cuckoo_py
