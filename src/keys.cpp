#include "keys.hpp"

#include <cctype>
#include <cstdlib>

#include <pybind11/gil_safe_call_once.h>

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

}  // namespace

// Points a batch built by append_bytes_of_item at its own storage.
void finish_owned(KeyBatch& b) {
    b.kind = BufferKind::VarBinary;
    b.size = b.owned_offsets.size() - 1;
    b.var_offsets = reinterpret_cast<const unsigned char*>(b.owned_offsets.data());
    b.offset_width = 8;
    b.var_data = b.owned_data.data();
    b.var_data_size = b.owned_data.size();
}

namespace {

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

}  // namespace

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

namespace {

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

// The input adapter of the package (python/cuckoo/_inputs.py, batch_parts), handed over when the
// package loads (cuckoo/__init__.py calls _core._set_input_adapter): the binding never imports a
// module of the package itself. Set and read with the GIL held; the reference is kept for the
// process (like python_object_once's objects), and a caller takes its own before calling it.
PyObject* g_input_adapter = nullptr;

PyObject* input_adapter() { return g_input_adapter; }

// One part of a batch that is neither a list nor a buffer: an Arrow producer (a stream covers
// chunked data, so it is preferred), else an iterable of keys.
void append_batches_of_part(const cuckoo::KeyHasher& f, const py::handle& part, KeyForm form, std::vector<KeyBatch>& out) {
    PyObject* o = part.ptr();
    std::vector<KeyBatch> arrow;
    if (PyObject_CheckBuffer(o)) {
        out.push_back(batch_of_buffer(f, part, form));
        return;
    }
    if (PyObject_HasAttrString(o, "__arrow_c_stream__")) arrow = batches_of_arrow_stream(f, part, form);
    else if (PyObject_HasAttrString(o, "__arrow_c_array__")) arrow = batches_of_arrow_array(f, part, form);
    else {
        out.push_back(of_iterable(f, part, form));
        return;
    }
    for (KeyBatch& b : arrow) out.push_back(std::move(b));
}

}  // namespace

// ---- keys as byte spans (the store) ----

namespace {

// Values of a bulk put are converted this many at a time (the scratch of fill_spans stays small).
constexpr uint64_t kValueChunk = uint64_t(1) << 18;

// Whether a key source of with_hasher has value(k) (the integer sources: their 64-bit word).
template <class T, class = void>
struct has_value : std::false_type {};
template <class T>
struct has_value<T, std::void_t<decltype(std::declval<const T&>().value(0))>> : std::true_type {};

}  // namespace

void fill_spans(const KeyBatch& b, uint64_t start, uint64_t n, KeySpans& c) {
    c.spans.resize(n);
    switch (b.kind) {
        case BufferKind::Int: {
            c.words.resize(n * 8);
            with_hasher(cuckoo::KeyHasher{0, cuckoo::HashAlgorithm::xxh3}, b, [&](auto keys) {
                if constexpr (has_value<decltype(keys)>::value) {
                    for (uint64_t j = 0; j < n; ++j) cuckoo::store_le64(&c.words[8 * j], keys.value(start + j));
                }
                return 0;
            });
            for (uint64_t j = 0; j < n; ++j) c.spans[j] = {&c.words[8 * j], 8};
            return;
        }
        case BufferKind::Bytes:
            for (uint64_t j = 0; j < n; ++j) {
                const unsigned char* p = b.data + static_cast<Py_ssize_t>(start + j) * b.stride;
                c.spans[j] = {p, cuckoo::unpadded_size(p, static_cast<size_t>(b.itemsize))};
            }
            return;
        case BufferKind::Unicode: {
            const Py_ssize_t chars = b.itemsize / 4;
            std::vector<uint64_t> at(n + 1, 0);
            c.words.clear();
            for (uint64_t j = 0; j < n; ++j) {
                const unsigned char* p = b.data + static_cast<Py_ssize_t>(start + j) * b.stride;
                auto cp = [&](Py_ssize_t i) {
                    uint32_t v;
                    std::memcpy(&v, p + 4 * i, 4);
                    return b.swap_bytes ? byteswap_value(v) : v;
                };
                Py_ssize_t len = chars;
                while (len > 0 && cp(len - 1) == 0) --len;
                const size_t base = c.words.size();
                c.words.resize(base + static_cast<size_t>(len) * 4);
                size_t w = 0;
                for (Py_ssize_t i = 0; i < len; ++i) w += encode_utf8(cp(i), &c.words[base + w]);
                c.words.resize(base + w);
                at[j + 1] = c.words.size();
            }
            for (uint64_t j = 0; j < n; ++j) c.spans[j] = {c.words.data() + at[j], at[j + 1] - at[j]};
            return;
        }
        case BufferKind::VarBinary:
            for (uint64_t j = 0; j < n; ++j) {
                const uint64_t k = start + j;
                int64_t lo, hi;
                if (b.offset_width == 4) {
                    lo = offset_at<int32_t>(b.var_offsets, k);
                    hi = offset_at<int32_t>(b.var_offsets, k + 1);
                } else {
                    lo = offset_at<int64_t>(b.var_offsets, k);
                    hi = offset_at<int64_t>(b.var_offsets, k + 1);
                }
                c.spans[j] = {b.var_data + lo, static_cast<uint64_t>(hi - lo)};
            }
            return;
        case BufferKind::Hashes:
        default:
            throw std::logic_error("a store batch must carry its keys' bytes");
    }
}

void fill_spans_and_hashes(const cuckoo::KeyHasher& hs, const KeyBatch& b, uint64_t start, uint64_t n, KeySpans& c) {
    fill_spans(b, start, n, c);
    c.hashes.resize(n);
    for (uint64_t j = 0; j < n; ++j) c.hashes[j] = hs.hash_key(c.spans[j].data, c.spans[j].len);
}

namespace {

// One rule for values, put() and put_many() alike: bytes (bytearray, memoryview) or str; never
// an int (its 8-byte word would be stored silently) or None.
bool is_value_object(PyObject* v) {
    return PyBytes_Check(v) || PyUnicode_Check(v) || PyByteArray_Check(v) || PyMemoryView_Check(v);
}
[[noreturn]] void refuse_value(PyObject* v, const std::string& where) {
    throw py::type_error("store values must be bytes or str, not " + type_name(v) + where);
}

// The values of put_many, checked by that rule: items of a list, tuple or other iterable one by
// one (an iterable is read into a list first), arrays by their kind (an integer array refused).
py::object checked_values(const py::handle& values) {
    PyObject* o = values.ptr();
    py::object seq = py::reinterpret_borrow<py::object>(values);
    const bool columnar = PyObject_CheckBuffer(o) || PyObject_HasAttrString(o, "__arrow_c_array__") ||
                          PyObject_HasAttrString(o, "__arrow_c_stream__") || PyObject_HasAttrString(o, "dtype");
    if (!columnar && !PyList_Check(o) && !PyTuple_Check(o) && !is_value_object(o)) {
        seq = py::reinterpret_steal<py::object>(PySequence_List(o));
        if (!seq) {
            if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw py::error_already_set();
            PyErr_Clear();
            throw py::type_error("put_many values must be a sequence or array of bytes or str, not " + type_name(o));
        }
    }
    if (PyList_Check(seq.ptr()) || PyTuple_Check(seq.ptr())) {
        const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
        for (Py_ssize_t k = 0; k < n; ++k) {
            PyObject* item = PySequence_Fast_GET_ITEM(seq.ptr(), k);
            if (!item || !is_value_object(item))
                refuse_value(item ? item : Py_None, " (put_many value " + std::to_string(k) + ")");
        }
    }
    return seq;
}

}  // namespace

void value_bytes(const py::handle& value, KeyBytes& out) {
    PyObject* v = value.ptr();
    if (!is_value_object(v)) refuse_value(v, "");
    if (!key_bytes_of_object(v, out)) throw py::error_already_set();
}

void collect_values(const cuckoo::KeyHasher& hs, const py::handle& values, uint64_t expected, ValueSpans& v) {
    v.source = checked_values(values);  // (kept alive: the spans may borrow from it)
    v.batches = make_batches(hs, v.source, KeyForm::Bytes);
    for (const KeyBatch& b : v.batches)
        if (b.kind == BufferKind::Int)
            throw py::type_error("store values must be bytes or str, not integers (put_many values)");
    if (total_size(v.batches) != expected)
        throw py::value_error("put_many: " + std::to_string(expected) + " keys but " +
                              std::to_string(total_size(v.batches)) + " values");
    v.spans.reserve(expected);
    KeySpans c;
    std::vector<std::pair<uint64_t, uint64_t>> in_arena;  // (span index, arena offset) to fix up
    for (const KeyBatch& b : v.batches) {
        for (uint64_t start = 0; start < b.size; start += kValueChunk) {
            const uint64_t n = std::min(kValueChunk, b.size - start);
            fill_spans(b, start, n, c);
            const bool copied = b.kind == BufferKind::Int || b.kind == BufferKind::Unicode;
            for (uint64_t j = 0; j < n; ++j) {
                if (copied) {
                    in_arena.push_back({v.spans.size(), v.arena.size()});
                    v.arena.insert(v.arena.end(), c.spans[j].data, c.spans[j].data + c.spans[j].len);
                }
                v.spans.push_back(c.spans[j]);
            }
        }
    }
    for (const auto& e : in_arena) v.spans[e.first].data = v.arena.data() + e.second;
}

void register_keys(py::module_& m) {
    m.def(
        "_set_input_adapter",
        [](py::object adapter) {
            if (!adapter.is_none() && !PyCallable_Check(adapter.ptr()))
                throw py::type_error("the input adapter must be callable or None");
            PyObject* old = g_input_adapter;
            g_input_adapter = adapter.is_none() ? nullptr : adapter.release().ptr();
            Py_XDECREF(old);
        },
        py::arg("adapter"),
        "Set the function that turns pandas and pyarrow inputs into parts (the package does this when it loads).");
}

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
    // pandas columns and pyarrow arrays: the package's adapter (set_input_adapter) turns them into
    // parts, or returns None for anything else.
    py::object parts = py::none();
    if (PyObject* adapter = input_adapter()) parts = py::reinterpret_borrow<py::object>(adapter)(keys);
    if (parts.is_none()) {
        append_batches_of_part(f, keys, form, out);
        return out;
    }
    for (py::handle part : parts) {
        if (py::isinstance<py::tuple>(part)) {
            py::tuple t = py::reinterpret_borrow<py::tuple>(part);
            out.push_back(batch_of_var_binary(t[0], t[1]));
        } else {
            append_batches_of_part(f, part, form, out);
        }
    }
    return out;
}

}  // namespace cuckoo_py
