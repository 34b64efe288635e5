#include "keys.hpp"

#include <cctype>
#include <cstdlib>

#include <pybind11/gil_safe_call_once.h>

// The Arrow C data and C stream interfaces: ABI-stable structs, declared as the specification
// says every consumer should (https://arrow.apache.org/docs/format/CDataInterface.html and
// CStreamInterface.html), guard macros included, so that they agree with any other copy.
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4
struct ArrowSchema {
    const char* format;
    const char* name;
    const char* metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema** children;
    struct ArrowSchema* dictionary;
    void (*release)(struct ArrowSchema*);
    void* private_data;
};
struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void** buffers;
    struct ArrowArray** children;
    struct ArrowArray* dictionary;
    void (*release)(struct ArrowArray*);
    void* private_data;
};
#endif
#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE
struct ArrowArrayStream {
    int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);
    int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);
    const char* (*get_last_error)(struct ArrowArrayStream*);
    void (*release)(struct ArrowArrayStream*);
    void* private_data;
};
#endif

namespace cuckoo_py {

namespace {

constexpr bool kHostLittleEndian = !CUCKOO_BIG_ENDIAN;

[[noreturn]] void throw_error_already_set() { throw py::error_already_set(); }

// Converting Python objects is a C loop holding the GIL: no bytecode runs to notice Ctrl-C, and a
// list of 10^8 keys takes seconds. Run the signal handlers every this many keys (cheap: a flag
// test; PyErr_CheckSignals does nothing outside the main thread).
constexpr size_t kKeysPerSignalCheck = size_t(1) << 16;
// The most hashes reserved on the word of an iterable's __length_hint__ (8 MiB).
constexpr size_t kMaxReserveFromHint = size_t(1) << 20;

// Python objects looked up once and kept for the process. Never in a plain function-local static:
// its initialiser would run an import, which releases the GIL, while C++ holds the static's guard;
// a second thread making its first bulk call then waits on that guard holding the GIL, and the
// first waits for the GIL forever. gil_safe_call_once_and_store drops the GIL before it waits.
// Leaked on purpose: destroying them after the interpreter has gone would crash at exit.
template <class Lookup>
PyObject* python_object_once(py::gil_safe_call_once_and_store<py::object>& storage, Lookup&& lookup) {
    return storage.call_once_and_store_result(std::forward<Lookup>(lookup)).get_stored().ptr();
}

void push_hash(std::vector<uint64_t>& out, uint64_t h) {
    out.push_back(h);
    if ((out.size() & (kKeysPerSignalCheck - 1)) == 0 && PyErr_CheckSignals() != 0) throw_error_already_set();
}

// Hashes one element of a container, holding a reference to it meanwhile: hashing an object with
// __index__ runs Python code, which may drop the container's own reference (e.g. by clearing it).
void append_hash_of_item(const cuckoo::KeyHasher& f, PyObject* item, std::vector<uint64_t>& out) {
    if (!item) {  // an object array that was never filled holds NULL
        PyErr_SetString(PyExc_TypeError, "None is not a valid key: keys must be int, bytes or str");
        throw_error_already_set();
    }
    uint64_t h;
    Py_INCREF(item);
    const bool ok = hash_object(f, item, h);
    Py_DECREF(item);
    if (!ok) throw_error_already_set();
    push_hash(out, h);
}

void append_object_hashes(const cuckoo::KeyHasher& f, PyObject* const* items, Py_ssize_t n, Py_ssize_t step,
                          std::vector<uint64_t>& out) {
    for (Py_ssize_t k = 0; k < n; ++k) append_hash_of_item(f, items[k * step], out);
}

KeyBatch hashes_of_iterable(const cuckoo::KeyHasher& f, const py::handle& keys) {
    KeyBatch b;
    b.kind = BufferKind::Hashes;
    PyObject* o = keys.ptr();
    if (PyList_Check(o)) {
        // Size and item re-read at every step: Python code run by a key's __index__ may change
        // the list. Like Python's list iterator, the conversion stops where the list now ends.
        b.hashes.reserve(static_cast<size_t>(PyList_GET_SIZE(o)));
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(o); ++k) append_hash_of_item(f, PyList_GET_ITEM(o, k), b.hashes);
    } else if (PyTuple_Check(o)) {  // immutable: its items live as long as it does
        const Py_ssize_t n = PyTuple_GET_SIZE(o);
        b.hashes.reserve(static_cast<size_t>(n));
        append_object_hashes(f, PySequence_Fast_ITEMS(o), n, 1, b.hashes);
    } else {
        py::object it = py::reinterpret_steal<py::object>(PyObject_GetIter(o));
        if (!it) {
            if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw_error_already_set();  // raised by __iter__
            PyErr_Clear();
            throw py::type_error(std::string("keys must be an iterable or array of int, bytes or str, not ") +
                                 type_name(o));
        }
        const Py_ssize_t hint = PyObject_LengthHint(o, 0);
        if (hint < 0) throw_error_already_set();  // __length_hint__ raised: list(keys) would fail too
        // Only a hint (any object can claim 2**62 items): reserve at most a bounded amount and let
        // the vector grow with the keys that really come.
        if (hint > 0) b.hashes.reserve(std::min(static_cast<size_t>(hint), kMaxReserveFromHint));
        while (PyObject* item = PyIter_Next(it.ptr())) {
            uint64_t h;
            const bool ok = hash_object(f, item, h);
            Py_DECREF(item);
            if (!ok) throw_error_already_set();
            push_hash(b.hashes, h);
        }
        if (PyErr_Occurred()) throw_error_already_set();
    }
    b.size = b.hashes.size();
    return b;
}

// Appends the bytes of one Python key to an owned VarBinary batch (see hash_of_item for why the
// reference is held).
void append_bytes_of_item(PyObject* item, KeyBatch& b) {
    if (!item) {
        PyErr_SetString(PyExc_TypeError, "None is not a valid key: keys must be int, bytes or str");
        throw_error_already_set();
    }
    Py_INCREF(item);
    bool ok;
    {
        KeyBytes bytes;
        ok = key_bytes_of_object(item, bytes);
        if (ok) b.owned_data.insert(b.owned_data.end(), bytes.data, bytes.data + bytes.len);
    }
    Py_DECREF(item);
    if (!ok) throw_error_already_set();
    b.owned_offsets.push_back(static_cast<int64_t>(b.owned_data.size()));
    if ((b.owned_offsets.size() & (kKeysPerSignalCheck - 1)) == 0 && PyErr_CheckSignals() != 0) throw_error_already_set();
}

// Points a batch built by append_bytes_of_item at its own storage.
void finish_owned(KeyBatch& b) {
    b.kind = BufferKind::VarBinary;
    b.size = b.owned_offsets.size() - 1;
    b.var_offsets = reinterpret_cast<const unsigned char*>(b.owned_offsets.data());
    b.offset_width = 8;
    b.var_data = b.owned_data.data();
    b.var_data_size = b.owned_data.size();
}

// The keys of a list, tuple or iterable as an owned VarBinary batch of their bytes.
KeyBatch bytes_of_iterable(const py::handle& keys) {
    KeyBatch b;
    b.owned_offsets.push_back(0);
    PyObject* o = keys.ptr();
    if (PyList_Check(o)) {
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(o); ++k) append_bytes_of_item(PyList_GET_ITEM(o, k), b);
    } else if (PyTuple_Check(o)) {
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(o); ++k) append_bytes_of_item(PyTuple_GET_ITEM(o, k), b);
    } else {
        py::object it = py::reinterpret_steal<py::object>(PyObject_GetIter(o));
        if (!it) {
            if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw_error_already_set();
            PyErr_Clear();
            throw py::type_error(std::string("keys must be an iterable or array of int, bytes or str, not ") +
                                 type_name(o));
        }
        while (PyObject* item = PyIter_Next(it.ptr())) {
            py::object hold = py::reinterpret_steal<py::object>(item);
            append_bytes_of_item(item, b);
        }
        if (PyErr_Occurred()) throw_error_already_set();
    }
    finish_owned(b);
    return b;
}

KeyBatch of_iterable(const cuckoo::KeyHasher& f, const py::handle& keys, KeyForm form) {
    return form == KeyForm::Bytes ? bytes_of_iterable(keys) : hashes_of_iterable(f, keys);
}

// A NumPy-style buffer: integers, 'S', 'U' or objects, one-dimensional, any strides.
KeyBatch batch_of_buffer(const cuckoo::KeyHasher& f, const py::handle& keys, KeyForm form) {
    if (py::isinstance<py::array>(keys)) {
        // NumPy cannot export these through the buffer protocol; say what the problem is
        const char kind = py::reinterpret_borrow<py::array>(keys).dtype().kind();
        if (kind == 'M' || kind == 'm')
            throw py::type_error(std::string(kind == 'M' ? "datetime64" : "timedelta64") +
                                 " arrays are not a batch of keys: keys must be integers, bytes or str "
                                 "(for their integer values use arr.view('int64'))");
    }
    py::buffer buf = py::reinterpret_borrow<py::buffer>(keys);
    py::buffer_info info = buf.request();
    if (info.ndim == 0)
        throw py::value_error("a 0-dimensional array is a single value, not a batch of keys: pass a one-dimensional "
                              "array (arr.reshape(1)) or a list ([arr.item()])");
    if (info.ndim != 1)
        throw py::value_error("keys must be a one-dimensional array, got " + std::to_string(info.ndim) +
                              " dimensions (use .ravel())");
    KeyBatch b;
    b.size = static_cast<uint64_t>(info.shape[0]);
    b.data = static_cast<const unsigned char*>(info.ptr);
    b.stride = info.strides[0];
    b.itemsize = info.itemsize;
    std::string fmt = info.format;
    bool big = !kHostLittleEndian;
    size_t pos = 0;
    while (pos < fmt.size() && std::strchr("@=<>!", fmt[pos])) {
        if (fmt[pos] == '>' || fmt[pos] == '!') big = true;
        if (fmt[pos] == '<') big = false;
        if (fmt[pos] == '@' || fmt[pos] == '=') big = !kHostLittleEndian;
        ++pos;
    }
    fmt = fmt.substr(pos);
    while (!fmt.empty() && std::isdigit(static_cast<unsigned char>(fmt[0]))) fmt.erase(0, 1);
    b.swap_bytes = (big == kHostLittleEndian);
    if (fmt.size() == 1 && std::strchr("bhilqn", fmt[0]) && (b.itemsize == 1 || b.itemsize == 2 || b.itemsize == 4 || b.itemsize == 8)) {
        b.kind = BufferKind::Int;
        b.is_signed = true;
    } else if (fmt.size() == 1 && std::strchr("BHILQN", fmt[0]) && (b.itemsize == 1 || b.itemsize == 2 || b.itemsize == 4 || b.itemsize == 8)) {
        b.kind = BufferKind::Int;
        b.is_signed = false;
    } else if (fmt == "s") {
        b.kind = BufferKind::Bytes;
    } else if (fmt == "w") {
        b.kind = BufferKind::Unicode;
        // Check every code point first: a lone surrogate or a value past U+10FFFF has no UTF-8
        // form (the scalar path raises UnicodeEncodeError, a ValueError, for the same key).
        const Py_ssize_t chars = b.itemsize / 4;
        for (uint64_t k = 0; k < b.size; ++k) {
            const unsigned char* p = b.data + static_cast<Py_ssize_t>(k) * b.stride;
            for (Py_ssize_t i = 0; i < chars; ++i) {
                uint32_t c;
                std::memcpy(&c, p + 4 * i, 4);
                if (b.swap_bytes) c = byteswap_value(c);
                if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
                    throw py::value_error("key " + std::to_string(k) +
                                          " of the str array is not valid Unicode (a surrogate or a code point past U+10FFFF)");
            }
        }
    } else if (fmt == "O") {
        if (b.stride % static_cast<Py_ssize_t>(sizeof(PyObject*)) != 0)
            throw py::value_error("object array with an unaligned stride");
        if (form == KeyForm::Bytes) {
            KeyBatch o;
            o.owned_offsets.push_back(0);
            const Py_ssize_t step = b.stride / static_cast<Py_ssize_t>(sizeof(PyObject*));
            PyObject* const* items = reinterpret_cast<PyObject* const*>(b.data);
            for (uint64_t k = 0; k < b.size; ++k) append_bytes_of_item(items[static_cast<Py_ssize_t>(k) * step], o);
            finish_owned(o);
            return o;
        }
        KeyBatch h;
        h.kind = BufferKind::Hashes;
        h.hashes.reserve(b.size);
        append_object_hashes(f, reinterpret_cast<PyObject* const*>(b.data), static_cast<Py_ssize_t>(b.size),
                             b.stride / static_cast<Py_ssize_t>(sizeof(PyObject*)), h.hashes);
        h.size = h.hashes.size();
        return h;
    } else if (fmt == "?") {
        throw py::type_error("a boolean array is not a batch of keys (keys must be integers, bytes or str)");
    } else if (!fmt.empty() && fmt[0] == 'Z') {
        throw py::type_error("complex arrays are not supported: keys must be integers, bytes or str (got format '" +
                             std::string(info.format) + "')");
    } else if (!fmt.empty() && std::strchr("efdg", fmt[0])) {
        throw py::type_error("float arrays are not supported: keys must be integers, bytes or str (got format '" +
                             std::string(info.format) + "')");
    } else {
        throw py::type_error("unsupported array element type (buffer format '" + std::string(info.format) +
                             "'): keys must be integers, bytes or str");
    }
    b.held.push_back(std::move(info));
    b.keep_alive.push_back(py::reinterpret_borrow<py::object>(keys));
    return b;
}

// Whether `count` >= 1 offsets keep every key inside data of `limit` bytes: the first is >= 0,
// the last <= limit, and none is below the one before it. Branch-free inside chunks, so that it
// vectorizes: the scalar loop with an early exit at each offset cost ~1.2 ns a key, a tenth of a
// lookup of Arrow string keys at 10^6 keys; this one ~0.35 (int32) and ~0.5 (int64) ns.
template <class Offset>
bool offsets_inside(const unsigned char* offsets, uint64_t count, int64_t limit) {
    if (offset_at<Offset>(offsets, 0) < 0 || offset_at<Offset>(offsets, count - 1) > limit) return false;
    using Bits = std::make_unsigned_t<Offset>;
    constexpr uint64_t kChunk = 4096;
    for (uint64_t start = 0; start + 1 < count; start += kChunk) {
        const uint64_t end = std::min(count - 1, start + kChunk);
        Bits decreasing = 0;
        for (uint64_t k = start; k < end; ++k) {
            const Bits a = static_cast<Bits>(offset_at<Offset>(offsets, k));
            const Bits b = static_cast<Bits>(offset_at<Offset>(offsets, k + 1));
            // The sign bit of this is set iff b < a as signed numbers (Hacker's Delight, chapter 2; no
            // overflow); written in unsigned arithmetic because SSE2 has no signed 64-bit compare.
            const Bits diff = b - a;
            decreasing |= diff ^ ((b ^ a) & (diff ^ b));
        }
        if (decreasing >> (8 * sizeof(Bits) - 1)) return false;
    }
    return true;
}

// The first offset that offsets_inside rejects (for the error message; only called when it did).
template <class Offset>
uint64_t first_offset_outside(const unsigned char* offsets, uint64_t count, int64_t limit) {
    int64_t prev = 0;
    for (uint64_t k = 0; k < count; ++k) {
        const int64_t o = offset_at<Offset>(offsets, k);
        if (o < prev || o > limit) return k;
        prev = o;
    }
    return count - 1;
}

// Validates the offsets of a VarBinary batch before any loop reads through them: never read
// outside var_data[0, var_data_size).
void check_var_binary(const KeyBatch& b) {
    const uint64_t count = b.size + 1;
    const int64_t limit = static_cast<int64_t>(b.var_data_size);
    bool valid;
    {
        py::gil_scoped_release nogil;  // a pass over every offset: other threads may run meanwhile
        valid = b.offset_width == 4 ? offsets_inside<int32_t>(b.var_offsets, count, limit)
                                    : offsets_inside<int64_t>(b.var_offsets, count, limit);
    }
    if (!valid) {
        const uint64_t k = b.offset_width == 4 ? first_offset_outside<int32_t>(b.var_offsets, count, limit)
                                               : first_offset_outside<int64_t>(b.var_offsets, count, limit);
        throw py::value_error("invalid offsets: offset " + std::to_string(k) + " is out of order or past the data");
    }
}

// Arrow-style variable-width keys: offsets (int32 or int64, n + 1 of them) into data (bytes).
KeyBatch batch_of_var_binary(const py::handle& offsets_obj, const py::handle& data_obj) {
    py::buffer_info offs = py::reinterpret_borrow<py::buffer>(offsets_obj).request();
    py::buffer_info data = py::reinterpret_borrow<py::buffer>(data_obj).request();
    if (offs.ndim != 1 || (offs.itemsize != 4 && offs.itemsize != 8) || offs.strides[0] != offs.itemsize)
        throw py::value_error("offsets must be a contiguous one-dimensional int32 or int64 array");
    if (data.ndim != 1 || data.itemsize != 1 || (data.shape[0] > 1 && data.strides[0] != 1))
        throw py::value_error("data must be a contiguous one-dimensional byte buffer");
    if (offs.shape[0] < 1) throw py::value_error("offsets must hold at least one entry");
    KeyBatch b;
    b.kind = BufferKind::VarBinary;
    b.size = static_cast<uint64_t>(offs.shape[0] - 1);
    b.var_offsets = static_cast<const unsigned char*>(offs.ptr);
    b.offset_width = static_cast<unsigned>(offs.itemsize);
    b.var_data = static_cast<const unsigned char*>(data.ptr);
    b.var_data_size = static_cast<uint64_t>(data.shape[0]);
    check_var_binary(b);
    b.held.push_back(std::move(offs));
    b.held.push_back(std::move(data));
    b.keep_alive.push_back(py::reinterpret_borrow<py::object>(offsets_obj));
    b.keep_alive.push_back(py::reinterpret_borrow<py::object>(data_obj));
    return b;
}

// ---- Arrow PyCapsule interface -----------------------------------------------------------------
// Any object with __arrow_c_stream__ or __arrow_c_array__ (Polars, DuckDB, nanoarrow, arro3, ...)
// is read through the Arrow C data interface, without pyarrow. Fixed-width integers and
// offsets-based strings/binaries are viewed in place (zero copy); the capsule that owns the array
// is kept in the batch's keep_alive, and its destructor calls the producer's release callback
// when the batch goes. View layouts (string_view / binary_view, Polars' default) have no offsets
// the core could read: a filter hashes their keys up front, a store copies their bytes.

// A slice [offset, offset + length) of an Arrow array (offset counts from its buffers' start:
// the array's own offset plus any parent's), with its schema.
struct ArrowSlice {
    const ArrowSchema* schema;
    const ArrowArray* array;
    int64_t offset;
    int64_t length;
};

constexpr const char* kArrowKeyTypes = "keys must be integers, strings or bytes";

// The same words as the pyarrow path (_inputs._arrow_type_problem) for a type that is no key.
[[noreturn]] void throw_arrow_type(const std::string& format) {
    std::string what = "unsupported Arrow type (format '" + format + "')";
    if (format == "e" || format == "f" || format == "g")
        what = "float column (Arrow format '" + format + "')";
    else if (format == "b")
        what = "boolean column (Arrow format '" + format + "')";
    else if (!format.empty() && format[0] == 't')
        what = "date/time column (Arrow format '" + format + "')";
    throw py::type_error(what + " is not a batch of keys: " + kArrowKeyTypes);
}

const void* arrow_buffer(const ArrowSlice& s, int64_t i) {
    if (s.array->n_buffers <= i || !s.array->buffers)
        throw py::value_error("invalid Arrow array: format '" + std::string(s.schema->format) + "' needs buffer " +
                              std::to_string(i) + ", the array has " + std::to_string(s.array->n_buffers));
    return s.array->buffers[i];
}

// Nulls in the slice, from the validity bitmap (buffer 0; absent: none).
uint64_t arrow_null_count(const ArrowSlice& s) {
    if (s.array->null_count == 0 || s.array->n_buffers < 1 || !s.array->buffers || !s.array->buffers[0]) return 0;
    const auto* bits = static_cast<const unsigned char*>(s.array->buffers[0]);
    uint64_t valid = 0;
    for (int64_t i = s.offset; i < s.offset + s.length; ++i) valid += (bits[i >> 3] >> (i & 7)) & 1;
    return static_cast<uint64_t>(s.length) - valid;
}

// Element k of an integer buffer of `width` bytes (native order, as the C data interface says).
int64_t arrow_int_at(const unsigned char* p, unsigned width, bool is_signed, int64_t k) {
    switch (width) {
        case 1: return is_signed ? static_cast<int8_t>(p[k]) : static_cast<int64_t>(p[k]);
        case 2: { uint16_t v; std::memcpy(&v, p + 2 * k, 2); return is_signed ? static_cast<int16_t>(v) : v; }
        case 4: { uint32_t v; std::memcpy(&v, p + 4 * k, 4); return is_signed ? static_cast<int32_t>(v) : static_cast<int64_t>(v); }
        default: { uint64_t v; std::memcpy(&v, p + 8 * k, 8); return static_cast<int64_t>(v); }
    }
}

// The integer formats of the C data interface: width in bytes, 0 for any other format.
unsigned arrow_int_width(const std::string& format, bool& is_signed) {
    static const char* const kFormats = "cCsSiIlL";
    if (format.size() != 1 || !std::strchr(kFormats, format[0])) return 0;
    is_signed = std::islower(static_cast<unsigned char>(format[0])) != 0;
    switch (format[0]) {
        case 'c': case 'C': return 1;
        case 's': case 'S': return 2;
        case 'i': case 'I': return 4;
        default: return 8;
    }
}

// An empty batch never reads its data: a buffer the producer left out may be null.
const unsigned char* readable(const void* p) {
    static const unsigned char kNothing[1] = {0};
    return p ? static_cast<const unsigned char*>(p) : kNothing;
}

// Keys given as (pointer, length) one at a time, as a batch: their hashes (a filter) or an owned
// copy of their bytes (a store). key_at(k, data, len) fills in key k.
template <class KeyAt>
KeyBatch batch_of_spans(const cuckoo::KeyHasher& f, uint64_t n, KeyForm form, KeyAt&& key_at) {
    KeyBatch b;
    if (form == KeyForm::Bytes) {
        b.owned_offsets.reserve(n + 1);
        b.owned_offsets.push_back(0);
        for (uint64_t k = 0; k < n; ++k) {
            const unsigned char* p;
            uint64_t len;
            key_at(k, p, len);
            b.owned_data.insert(b.owned_data.end(), p, p + len);
            b.owned_offsets.push_back(static_cast<int64_t>(b.owned_data.size()));
        }
        finish_owned(b);
        return b;
    }
    b.kind = BufferKind::Hashes;
    b.hashes.resize(n);
    {
        // Safe without the GIL: reads only the producer's buffers, which the caller keeps alive
        // (the capsule owning them), and writes only b.hashes.
        py::gil_scoped_release nogil;
        for (uint64_t k = 0; k < n; ++k) {
            const unsigned char* p;
            uint64_t len;
            key_at(k, p, len);
            b.hashes[k] = f.hash_key(p, static_cast<size_t>(len));
        }
    }
    b.size = n;
    return b;
}

// string_view / binary_view: 16-byte views; a key of at most 12 bytes lies inside its view, a
// longer one in data buffer `index` at `offset`. Buffers: validity, views, the data buffers, and
// last the int64 sizes of the data buffers, against which every view is checked.
KeyBatch batch_of_arrow_views(const cuckoo::KeyHasher& f, const ArrowSlice& s, KeyForm form) {
    const int64_t n_data = s.array->n_buffers - 3;
    if (n_data < 0)
        throw py::value_error("invalid Arrow array: a view layout needs at least 3 buffers, it has " +
                              std::to_string(s.array->n_buffers));
    if (s.length && !arrow_buffer(s, 1)) throw py::value_error("invalid Arrow array: the views buffer is missing");
    const unsigned char* views = readable(arrow_buffer(s, 1)) + 16 * s.offset;
    const auto* sizes = static_cast<const unsigned char*>(arrow_buffer(s, s.array->n_buffers - 1));
    if (n_data > 0 && !sizes) throw py::value_error("invalid Arrow array: the view layout's buffer sizes are missing");
    auto key_at = [&](uint64_t k, const unsigned char*& p, uint64_t& len) {
        const unsigned char* v = views + 16 * k;
        int32_t length, index, offset;
        std::memcpy(&length, v, 4);
        if (length < 0) throw py::value_error("invalid Arrow view " + std::to_string(k) + ": negative length");
        len = static_cast<uint64_t>(length);
        if (length <= 12) {
            p = v + 4;
            return;
        }
        std::memcpy(&index, v + 8, 4);
        std::memcpy(&offset, v + 12, 4);
        int64_t size = 0;
        if (index >= 0 && index < n_data) std::memcpy(&size, sizes + 8 * index, 8);
        if (index < 0 || index >= n_data || offset < 0 || static_cast<int64_t>(offset) + length > size ||
            !s.array->buffers[2 + index])
            throw py::value_error("invalid Arrow view " + std::to_string(k) + ": it points outside its data buffers");
        p = static_cast<const unsigned char*>(s.array->buffers[2 + index]) + offset;
    };
    return batch_of_spans(f, static_cast<uint64_t>(s.length), form, key_at);
}

void arrow_batches(const cuckoo::KeyHasher& f, const ArrowSlice& s, const py::object& owner, KeyForm form,
                   std::vector<KeyBatch>& out);

// A dictionary-encoded slice (Polars' categoricals): the dictionary's keys picked by the indices.
void arrow_dictionary_batches(const cuckoo::KeyHasher& f, const ArrowSlice& s, const py::object& owner, KeyForm form,
                              std::vector<KeyBatch>& out) {
    bool is_signed = false;
    const unsigned width = arrow_int_width(s.schema->format, is_signed);
    if (!width || !s.array->dictionary)
        throw py::value_error("invalid Arrow array: a dictionary with index format '" + std::string(s.schema->format) + "'");
    const ArrowArray* d = s.array->dictionary;
    std::vector<KeyBatch> values;
    arrow_batches(f, ArrowSlice{s.schema->dictionary, d, d->offset, d->length}, owner, form, values);
    // One batch, the dictionary's keys in order (an empty dictionary gives none).
    const KeyBatch* dict = values.empty() ? nullptr : &values[0];
    const uint64_t dict_size = dict ? dict->size : 0;
    if (s.length && !arrow_buffer(s, 1)) throw py::value_error("invalid Arrow array: the indices buffer is missing");
    const unsigned char* indices = readable(arrow_buffer(s, 1));
    auto index_at = [&](uint64_t k) {
        const int64_t i = arrow_int_at(indices, width, is_signed, s.offset + static_cast<int64_t>(k));
        if (i < 0 || static_cast<uint64_t>(i) >= dict_size)
            throw py::value_error("invalid Arrow dictionary array: index " + std::to_string(i) + " of key " +
                                  std::to_string(k) + " is outside its " + std::to_string(dict_size) + " values");
        return static_cast<uint64_t>(i);
    };
    const uint64_t n = static_cast<uint64_t>(s.length);
    if (form == KeyForm::Hashes) {
        std::vector<uint64_t> dict_hashes(dict_size);
        if (dict_size)
            with_hasher(f, *dict, [&](auto&& hash_at) {
                for (uint64_t j = 0; j < dict_size; ++j) dict_hashes[j] = hash_at(j);
            });
        KeyBatch b;
        b.kind = BufferKind::Hashes;
        b.hashes.resize(n);
        for (uint64_t k = 0; k < n; ++k) b.hashes[k] = dict_hashes[index_at(k)];
        b.size = n;
        out.push_back(std::move(b));
        return;
    }
    // A store keeps bytes: the dictionary's values are offsets-based (strings) or integers.
    unsigned char word[8];
    out.push_back(batch_of_spans(f, n, form, [&](uint64_t k, const unsigned char*& p, uint64_t& len) {
        const uint64_t j = index_at(k);
        if (dict->kind == BufferKind::VarBinary) {
            const int64_t lo = dict->offset_width == 4 ? offset_at<int32_t>(dict->var_offsets, j) : offset_at<int64_t>(dict->var_offsets, j);
            const int64_t hi = dict->offset_width == 4 ? offset_at<int32_t>(dict->var_offsets, j + 1) : offset_at<int64_t>(dict->var_offsets, j + 1);
            p = dict->var_data + lo;
            len = static_cast<uint64_t>(hi - lo);
        } else {
            bool sign = false;
            const unsigned w = arrow_int_width(s.schema->dictionary->format, sign);
            cuckoo::store_le64(word, static_cast<uint64_t>(arrow_int_at(dict->data, w, sign, static_cast<int64_t>(j))));
            p = word;
            len = 8;
        }
    }));
}

// The batches of one Arrow slice: checked for nulls first, then by format.
void arrow_batches(const cuckoo::KeyHasher& f, const ArrowSlice& s, const py::object& owner, KeyForm form,
                   std::vector<KeyBatch>& out) {
    if (!s.schema->format) throw py::value_error("invalid Arrow schema: no format");
    const std::string format = s.schema->format;
    if (s.length < 0 || s.offset < 0) throw py::value_error("invalid Arrow array: negative length or offset");
    if (format == "n") {  // the null type: every element is null
        if (s.length) throw py::value_error("keys contain " + std::to_string(s.length) + " null value(s): nulls are not keys");
        return;
    }
    if (const uint64_t nulls = arrow_null_count(s))
        throw py::value_error("keys contain " + std::to_string(nulls) + " null value(s): nulls are not keys");
    if (format == "+s") {  // a record batch (a table's rows, a query result): one column of keys
        if (s.schema->n_children != 1 || s.array->n_children != 1)
            throw py::type_error("an Arrow table or struct of " + std::to_string(s.schema->n_children) +
                                 " columns is not a batch of keys: pass one column");
        const ArrowArray* c = s.array->children[0];
        if (!c || !s.schema->children[0] || c->length < (s.offset - s.array->offset) + s.length)
            throw py::value_error("invalid Arrow struct array: its column is shorter than the struct");
        // A struct's slice applies to its children on top of their own offsets.
        arrow_batches(f, ArrowSlice{s.schema->children[0], c, c->offset + (s.offset - s.array->offset), s.length},
                      owner, form, out);
        return;
    }
    if (s.schema->dictionary) {
        arrow_dictionary_batches(f, s, owner, form, out);
        return;
    }
    bool is_signed = false;
    if (const unsigned width = arrow_int_width(format, is_signed)) {
        if (s.length && !arrow_buffer(s, 1)) throw py::value_error("invalid Arrow array: the data buffer is missing");
        KeyBatch b;
        b.kind = BufferKind::Int;
        b.size = static_cast<uint64_t>(s.length);
        b.data = readable(arrow_buffer(s, 1)) + width * static_cast<uint64_t>(s.offset);
        b.stride = b.itemsize = width;
        b.is_signed = is_signed;
        b.keep_alive.push_back(owner);
        out.push_back(std::move(b));
        return;
    }
    if (format == "u" || format == "z" || format == "U" || format == "Z") {
        KeyBatch b;
        b.kind = BufferKind::VarBinary;
        b.size = static_cast<uint64_t>(s.length);
        b.offset_width = (format == "U" || format == "Z") ? 8 : 4;
        b.var_offsets = readable(arrow_buffer(s, 1)) + b.offset_width * static_cast<uint64_t>(s.offset);
        b.var_data = readable(arrow_buffer(s, 2));
        // The C data interface gives no buffer lengths: the data buffer holds at least up to the
        // last offset (the specification's promise), and check_var_binary keeps every key below it.
        const int64_t last = s.array->buffers[1] ? (b.offset_width == 4 ? offset_at<int32_t>(b.var_offsets, b.size)
                                                                          : offset_at<int64_t>(b.var_offsets, b.size))
                                                 : 0;
        if (last < 0 || (last > 0 && !s.array->buffers[2]))
            throw py::value_error("invalid Arrow array: offset " + std::to_string(b.size) + " is out of order or past the data");
        b.var_data_size = static_cast<uint64_t>(last);
        if (!s.array->buffers[1] && b.size) throw py::value_error("invalid Arrow array: the offsets buffer is missing");
        if (b.size) check_var_binary(b);
        b.keep_alive.push_back(owner);
        out.push_back(std::move(b));
        return;
    }
    if (format == "vu" || format == "vz") {
        out.push_back(batch_of_arrow_views(f, s, form));
        return;
    }
    if (format.rfind("w:", 0) == 0) {  // fixed_size_binary: every byte of each element is key
        const int64_t width = std::atoll(format.c_str() + 2);
        if (width <= 0) throw_arrow_type(format);
        if (s.length && !arrow_buffer(s, 1)) throw py::value_error("invalid Arrow array: the data buffer is missing");
        KeyBatch b;
        b.owned_offsets.resize(static_cast<size_t>(s.length) + 1);
        for (int64_t k = 0; k <= s.length; ++k) b.owned_offsets[static_cast<size_t>(k)] = k * width;
        finish_owned(b);
        b.var_data = readable(arrow_buffer(s, 1)) + width * s.offset;
        b.var_data_size = static_cast<uint64_t>(width * s.length);
        b.keep_alive.push_back(owner);
        out.push_back(std::move(b));
        return;
    }
    throw_arrow_type(format);
}

// Owns one ArrowArray moved out of a stream; the capsule's destructor releases it.
py::object own_arrow_array(ArrowArray& array) {
    auto* held = new ArrowArray(array);
    array.release = nullptr;  // moved: the stream's struct no longer owns it
    PyObject* cap = PyCapsule_New(held, nullptr, [](PyObject* c) {
        auto* a = static_cast<ArrowArray*>(PyCapsule_GetPointer(c, nullptr));
        if (a->release) a->release(a);
        delete a;
    });
    if (!cap) {
        held->release(held);
        delete held;
        throw_error_already_set();
    }
    return py::reinterpret_steal<py::object>(cap);
}

template <class T>
T* capsule_pointer(const py::handle& cap, const char* name, const char* method) {
    if (!PyCapsule_IsValid(cap.ptr(), name))
        throw py::type_error(std::string(method) + "() did not return a PyCapsule named '" + name + "'");
    return static_cast<T*>(PyCapsule_GetPointer(cap.ptr(), name));
}

[[noreturn]] void throw_stream_error(ArrowArrayStream* stream, int code) {
    if (PyErr_Occurred()) throw_error_already_set();  // raised by a producer written in Python
    const char* msg = stream->get_last_error ? stream->get_last_error(stream) : nullptr;
    throw py::value_error("the Arrow stream failed (error " + std::to_string(code) + "): " +
                          (msg ? msg : "no message"));
}

// The batches of an object exporting __arrow_c_stream__: one or more per chunk.
std::vector<KeyBatch> batches_of_arrow_stream(const cuckoo::KeyHasher& f, const py::handle& keys, KeyForm form) {
    py::object cap = keys.attr("__arrow_c_stream__")();
    auto* stream = capsule_pointer<ArrowArrayStream>(cap, "arrow_array_stream", "__arrow_c_stream__");
    if (!stream->release) throw py::value_error("__arrow_c_stream__() returned a released stream");
    ArrowSchema schema{};
    if (const int rc = stream->get_schema(stream, &schema)) throw_stream_error(stream, rc);
    struct ReleaseSchema {
        ArrowSchema& s;
        ~ReleaseSchema() { if (s.release) s.release(&s); }
    } release_schema{schema};
    std::vector<KeyBatch> out;
    for (;;) {
        ArrowArray array{};
        if (const int rc = stream->get_next(stream, &array)) throw_stream_error(stream, rc);
        if (!array.release) break;  // the end of the stream
        py::object owner = own_arrow_array(array);
        const auto* held = static_cast<const ArrowArray*>(PyCapsule_GetPointer(owner.ptr(), nullptr));
        arrow_batches(f, ArrowSlice{&schema, held, held->offset, held->length}, owner, form, out);
        if (PyErr_CheckSignals() != 0) throw_error_already_set();  // a long stream: let Ctrl-C in
    }
    return out;
}

// The batches of an object exporting __arrow_c_array__: the array capsule is the owner (its
// destructor releases the array).
std::vector<KeyBatch> batches_of_arrow_array(const cuckoo::KeyHasher& f, const py::handle& keys, KeyForm form) {
    py::object pair = keys.attr("__arrow_c_array__")();
    if (!py::isinstance<py::tuple>(pair) || py::len(pair) != 2)
        throw py::type_error("__arrow_c_array__() did not return a (schema, array) pair of PyCapsules");
    py::tuple t = py::reinterpret_borrow<py::tuple>(pair);
    const auto* schema = capsule_pointer<ArrowSchema>(t[0], "arrow_schema", "__arrow_c_array__");
    const auto* array = capsule_pointer<ArrowArray>(t[1], "arrow_array", "__arrow_c_array__");
    if (!schema->release || !array->release) throw py::value_error("__arrow_c_array__() returned a released array");
    std::vector<KeyBatch> out;
    arrow_batches(f, ArrowSlice{schema, array, array->offset, array->length}, py::reinterpret_borrow<py::object>(t[1]),
                  form, out);
    return out;
}

}  // namespace

std::vector<KeyBatch> make_batches(const cuckoo::KeyHasher& f, const py::handle& keys, KeyForm form) {
    PyObject* o = keys.ptr();
    std::vector<KeyBatch> out;
    if (PyBytes_Check(o) || PyUnicode_Check(o) || PyByteArray_Check(o))
        throw py::type_error("a single " + type_name(o) +
                             " object is not a batch of keys: pass a list or array of keys, e.g. [key]");
    if (PyList_Check(o) || PyTuple_Check(o)) {
        out.push_back(of_iterable(f, keys, form));
        return out;
    }
    if (PyObject_CheckBuffer(o)) {
        // An ndarray subclass may be a masked array: its buffer holds values under the mask too,
        // which are missing values, not keys. (Plain ndarrays skip the Python call.)
        PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> ndarray_storage;
        PyObject* ndarray_type = python_object_once(ndarray_storage, [] { return py::module_::import("numpy").attr("ndarray"); });
        if (Py_TYPE(o) != reinterpret_cast<PyTypeObject*>(ndarray_type) && py::isinstance<py::array>(keys)) {
            PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> is_masked_storage;
            py::handle is_masked = python_object_once(is_masked_storage, [] { return py::module_::import("numpy.ma").attr("is_masked"); });
            if (is_masked(keys).cast<bool>())
                throw py::value_error("keys contain masked (missing) values: missing values are not keys "
                                      "(use arr.compressed() to drop them)");
        }
        out.push_back(batch_of_buffer(f, keys, form));
        return out;
    }
    // Arrow arrays, chunked arrays, pandas Series and friends: the Python side turns them into
    // zero-copy parts (NumPy arrays, or (offsets, data) pairs for variable-width strings).
    PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> to_parts_storage;
    py::handle to_parts = python_object_once(to_parts_storage, [] { return py::module_::import("cuckoo._inputs").attr("batch_parts"); });
    py::object parts = to_parts(keys);
    if (parts.is_none()) {
        // Any other Arrow producer: a stream covers chunked data, so it is preferred
        if (PyObject_HasAttrString(o, "__arrow_c_stream__")) return batches_of_arrow_stream(f, keys, form);
        if (PyObject_HasAttrString(o, "__arrow_c_array__")) return batches_of_arrow_array(f, keys, form);
        out.push_back(of_iterable(f, keys, form));
        return out;
    }
    for (py::handle part : parts) {
        if (py::isinstance<py::tuple>(part)) {
            py::tuple t = py::reinterpret_borrow<py::tuple>(part);
            out.push_back(batch_of_var_binary(t[0], t[1]));
        } else if (PyObject_CheckBuffer(part.ptr())) {
            out.push_back(batch_of_buffer(f, part, form));
        } else {
            out.push_back(of_iterable(f, part, form));
        }
    }
    return out;
}

}  // namespace cuckoo_py
