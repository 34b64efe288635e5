// One Python key object -> its bytes or its 64-bit hash (int_key_value, KeyBytes, hash_object).
// Uses only the C API, not pybind11: the scalar calls (scalar_calls.cpp, a unit of its own that
// includes no pybind11) hash each key with these. The rules for keys: keys.hpp.
#pragma once

#include <Python.h>

#include <cstddef>
#include <cstdint>

#include "cuckoo/hash.hpp"

namespace cuckoo_py {

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

}  // namespace cuckoo_py
