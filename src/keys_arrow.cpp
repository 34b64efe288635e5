// Keys from the Arrow C data interface: any object with __arrow_c_stream__ or __arrow_c_array__
// (pyarrow, Polars, DuckDB, nanoarrow, arro3, pandas' Arrow-backed columns, ...) becomes key
// batches here, without pyarrow. The rules for nulls and for types that are not keys live only
// here. Part of the key conversion of keys.hpp (make_batches calls these).
#include "keys.hpp"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

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

// The name of the Arrow type of a format string that is no key type, in pyarrow's words (for
// error messages; "" for a format not listed).
std::string arrow_type_name(const std::string& format) {
    static const std::pair<const char*, const char*> kExact[] = {
        {"e", "halffloat"}, {"f", "float"}, {"g", "double"}, {"b", "bool"}, {"tdD", "date32"}, {"tdm", "date64"},
        {"tts", "time32[s]"}, {"ttm", "time32[ms]"}, {"ttu", "time64[us]"}, {"ttn", "time64[ns]"},
        {"tDs", "duration[s]"}, {"tDm", "duration[ms]"}, {"tDu", "duration[us]"}, {"tDn", "duration[ns]"},
        {"tiM", "month_interval"}, {"tiD", "day_time_interval"}, {"tin", "month_day_nano_interval"},
        {"+l", "list"}, {"+L", "large_list"}, {"+vl", "list_view"}, {"+vL", "large_list_view"}, {"+m", "map"},
        {"+r", "run_end_encoded"}};
    for (const auto& e : kExact)
        if (format == e.first) return e.second;
    static const std::pair<const char*, const char*> kPrefix[] = {
        {"tss", "timestamp[s]"}, {"tsm", "timestamp[ms]"}, {"tsu", "timestamp[us]"}, {"tsn", "timestamp[ns]"},
        {"d:", "decimal"}, {"+w:", "fixed_size_list"}, {"+ud:", "dense_union"}, {"+us:", "sparse_union"}};
    for (const auto& e : kPrefix)
        if (format.rfind(e.first, 0) == 0) return e.second;
    return "";
}

// The error for a column whose type is no key type: what it is, its format string, and the
// name of its type.
[[noreturn]] void throw_arrow_type(const std::string& format) {
    std::string what = "unsupported Arrow type (format '" + format + "')";
    if (format == "e" || format == "f" || format == "g")
        what = "float column (Arrow format '" + format + "')";
    else if (format == "b")
        what = "boolean column (Arrow format '" + format + "')";
    else if (!format.empty() && format[0] == 't')
        what = "date/time column (Arrow format '" + format + "')";
    const std::string name = arrow_type_name(format);
    throw py::type_error(what + " is not a batch of keys: " + kArrowKeyTypes + (name.empty() ? "" : ", not " + name));
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
        throw py::error_already_set();
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
    if (PyErr_Occurred()) throw py::error_already_set();  // raised by a producer written in Python
    const char* msg = stream->get_last_error ? stream->get_last_error(stream) : nullptr;
    throw py::value_error("the Arrow stream failed (error " + std::to_string(code) + "): " +
                          (msg ? msg : "no message"));
}

}  // namespace

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
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();  // a long stream: let Ctrl-C in
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


}  // namespace cuckoo_py
