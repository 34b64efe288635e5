// Persistence of cuckoo.Filter: to_bytes / from_bytes, the zero-copy view behind
// Filter.load(path, mmap=True), and the streaming writer behind Filter.save. The format itself is
// in cpp/include/cuckoo/format.hpp; the file handling (temporary file, fsync, rename, mmap) is in
// python/cuckoo/_persist.py.
#include <pybind11/pybind11.h>

#include <cerrno>
#include <cstring>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#if defined(_WIN32)
#include <io.h>
#else
#include <unistd.h>
#endif

#include "cuckoo/format.hpp"
#include "filter_binding.hpp"
#include "memory.hpp"

namespace cuckoo_py {

namespace {

namespace fmt = cuckoo::format;

[[noreturn]] void not_bytes_like(const char* func, PyObject* obj) {
    throw py::type_error(std::string(func) + "() needs a contiguous bytes-like object (bytes, bytearray, memoryview, "
                                             "mmap, ...), not " + Py_TYPE(obj)->tp_name);
}

// A contiguous buffer exported by a Python object for as long as this lives.
class ByteSource {
public:
    ByteSource(const py::handle& obj, const char* func) {
        if (PyUnicode_Check(obj.ptr()) || PyObject_GetBuffer(obj.ptr(), &view_, PyBUF_SIMPLE) != 0) {
            PyErr_Clear();
            not_bytes_like(func, obj.ptr());
        }
    }
    ~ByteSource() { PyBuffer_Release(&view_); }
    ByteSource(const ByteSource&) = delete;
    ByteSource& operator=(const ByteSource&) = delete;
    const unsigned char* data() const { return static_cast<const unsigned char*>(view_.buf); }
    size_t size() const { return static_cast<size_t>(view_.len); }

private:
    Py_buffer view_{};
};

py::bytes to_bytes(const PyFilter& self) {
    ReadLock lock(self);
    const uint64_t n = fmt::serialized_size(self.core);
    if (n > static_cast<uint64_t>(PY_SSIZE_T_MAX)) throw std::length_error("filter too large for a bytes object");
    auto out = py::reinterpret_steal<py::bytes>(PyBytes_FromStringAndSize(nullptr, static_cast<Py_ssize_t>(n)));
    if (!out) throw py::error_already_set();
    auto* dst = reinterpret_cast<unsigned char*>(PyBytes_AS_STRING(out.ptr()));
    {
        // Safe without the GIL: reads the table under the read lock and writes only into `out`,
        // a new object no other thread can see yet. Large tables take a while (checksum + copy).
        py::gil_scoped_release nogil;
        if (!self.core.writable()) fmt::check_item_counts(self.core);  // see copy_of (filter_binding.cpp)
        fmt::write_into(self.core, dst, static_cast<size_t>(n));
    }
    return out;
}

std::unique_ptr<PyFilter> from_bytes(const py::handle& data) {
    ByteSource src(data, "from_bytes");
    auto f = [&] {
        // Safe without the GIL: `src` keeps the buffer exported (it cannot be resized or freed);
        // the core copies the header and the table before checking them, so a concurrent change
        // of a mutable buffer cannot make it read out of bounds or accept what it did not check.
        py::gil_scoped_release nogil;
        return fmt::from_bytes(src.data(), src.size());
    }();
    return std::make_unique<PyFilter>(std::move(f));
}

// A read-only filter over the buffer of `obj` (an mmap object from Filter.load), zero-copy. A
// memoryview of `obj` is kept in PyFilter::backing: it holds the buffer export for the filter's
// lifetime, so the mapping can be neither closed nor freed while the table points into it.
std::unique_ptr<PyFilter> from_view(const py::handle& obj, bool verify) {
    if (PyUnicode_Check(obj.ptr())) not_bytes_like("_from_view", obj.ptr());
    auto mv = py::reinterpret_steal<py::object>(PyMemoryView_FromObject(obj.ptr()));
    if (!mv) {
        PyErr_Clear();
        not_bytes_like("_from_view", obj.ptr());
    }
    const Py_buffer* b = PyMemoryView_GET_BUFFER(mv.ptr());
    if (!PyBuffer_IsContiguous(b, 'C')) not_bytes_like("_from_view", obj.ptr());
    const auto* data = static_cast<const unsigned char*>(b->buf);
    const auto size = static_cast<size_t>(b->len);
    auto f = [&] {
        // Safe without the GIL: the memoryview holds the export; verify reads the whole table.
        py::gil_scoped_release nogil;
        return fmt::view_bytes(data, size, verify);
    }();
    auto out = std::make_unique<PyFilter>(std::move(f));
    out->backing = std::move(mv);
    return out;
}

// How many bytes the serialized filter that `data` starts with has, as far as `data` tells (see
// cuckoo::format::bytes_needed): Filter.load reads pipes and devices in these steps. A declared
// length that cannot fit in memory raises MemoryError before anything more is read.
uint64_t bytes_needed(const py::handle& data) {
    ByteSource src(data, "_bytes_needed");
    const uint64_t n = fmt::bytes_needed(src.data(), src.size());
    require_memory(n, "the filter data (by the size its header declares)");
    return n;
}

// Writes the serialized filter to a file descriptor (the temporary file of Filter.save), straight
// from the table's memory: no second copy of a large filter in memory.
void write_fd(const PyFilter& self, int fd) {
    ReadLock lock(self);
    int err = 0;
    {
        // Safe without the GIL: reads the table under the read lock; writes to a plain descriptor.
        py::gil_scoped_release nogil;
        if (!self.core.writable()) fmt::check_item_counts(self.core);  // see copy_of (filter_binding.cpp)
        fmt::write(self.core, [&](const unsigned char* p, size_t n) {
            while (n > 0 && err == 0) {
                const size_t chunk = n < (size_t(1) << 30) ? n : (size_t(1) << 30);
#if defined(_WIN32)
                const auto w = ::_write(fd, p, static_cast<unsigned>(chunk));
#else
                const auto w = ::write(fd, p, chunk);
#endif
                if (w < 0) {
                    if (errno != EINTR) err = errno;
                    continue;
                }
                p += w;
                n -= static_cast<size_t>(w);
            }
        });
    }
    if (err != 0) {
        errno = err;
        PyErr_SetFromErrno(PyExc_OSError);
        throw py::error_already_set();
    }
}

// A file object's read() and write() are called with at most this many bytes at a time: what a
// save or load of a file object holds in memory besides the filter.
constexpr size_t kStreamChunk = size_t(1) << 20;

// file.read as the source of cuckoo::format::StreamReader: each call asks for at most
// kStreamChunk bytes and copies what it gets (a bytes object the reader owns, so the file
// object never holds a view of the table's memory).
struct FileRead {
    py::handle read;

    uint64_t operator()(unsigned char* dst, uint64_t n) const {
        const size_t ask = static_cast<size_t>(n < kStreamChunk ? n : kStreamChunk);
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();  // Ctrl-C between chunks
        py::object got = read(ask);
        if (got.is_none())
            throw py::type_error("read() returned None: a non-blocking stream with no data ready cannot be loaded");
        if (PyUnicode_Check(got.ptr()))
            throw py::type_error("read() returned str: open the file in binary mode ('rb')");
        ByteSource src(got, "read");
        if (src.size() > ask)
            throw py::value_error("read(" + std::to_string(ask) + ") returned " + std::to_string(src.size()) + " bytes");
        if (src.size()) std::memcpy(dst, src.data(), src.size());
        return src.size();
    }
};

// A filter read from a file object's read() in chunks of at most kStreamChunk bytes, each table
// straight into the new filter's memory (no copy of the whole data): the header is checked before
// anything it declares is allocated, nothing past the declared length is read, and every table
// is verified (checksum, item count) as from_bytes does.
std::unique_ptr<PyFilter> read_from(const py::handle& read) {
    FileRead source{read};
    fmt::StreamReader<FileRead> in(source);
    std::vector<unsigned char> header;
    const fmt::Header h = fmt::read_stream_header(in, header);
    require_memory(h.file_length, "the filter data (by the size its header declares)");
    std::vector<cuckoo::PackedTable> tables = fmt::read_stream_tables(in, h);
    auto f = [&] {
        // Safe without the GIL: the tables are this call's own, nobody else can see them yet.
        py::gil_scoped_release nogil;
        return fmt::from_stream_tables(h, std::move(tables));
    }();
    return std::make_unique<PyFilter>(std::move(f));
}

// Writes the serialized filter to a file object's write(), in bytes objects of at most
// kStreamChunk bytes (copies: the file object may keep what it is given). Partial writes (a raw
// file's write returning fewer bytes) are continued. Under the read lock, as write_fd: write()
// must not change this filter.
void write_to(const PyFilter& self, const py::handle& write) {
    ReadLock lock(self);
    if (!self.core.writable()) {  // see copy_of (filter_binding.cpp)
        py::gil_scoped_release nogil;
        fmt::check_item_counts(self.core);
    }
    fmt::write(self.core, [&](const unsigned char* p, size_t n) {
        while (n > 0) {
            const size_t chunk = n < kStreamChunk ? n : kStreamChunk;
            py::object written = write(py::bytes(reinterpret_cast<const char*>(p), chunk));
            size_t done = chunk;
            if (PyLong_Check(written.ptr())) {  // None (or anything else): all of it, like io.BufferedWriter
                const long long w = PyLong_AsLongLong(written.ptr());
                if (w == -1 && PyErr_Occurred()) throw py::error_already_set();
                if (w <= 0 || static_cast<unsigned long long>(w) > chunk)
                    throw py::value_error("write() of " + std::to_string(chunk) + " bytes returned " + std::to_string(w));
                done = static_cast<size_t>(w);
            }
            p += done;
            n -= done;
        }
    });
}

}  // namespace

void register_persistence(FilterClass& cls) {
    cls.def("to_bytes", &to_bytes,
            "The filter serialized in the portable cuckoo format (docs/format.md): little-endian, versioned, "
            "checksummed. Filter.from_bytes reads it back.");
    cls.def_static("from_bytes", &from_bytes, py::arg("data"),
                   "A filter from serialized bytes (any contiguous bytes-like object), with its own copy of the "
                   "table. Every byte is checked; bad data raises cuckoo.FormatError saying what is wrong.");
    cls.def_static("_from_view", &from_view, py::arg("buffer"), py::arg("verify"),
                   "Internal (Filter.load(mmap=True)): a read-only filter whose table is a view of buffer.");
    cls.def_static("_bytes_needed", &bytes_needed, py::arg("data"),
                   "Internal (Filter.load of a pipe or device): the bytes the serialized filter starting with data "
                   "has, as far as data tells.");
    cls.def("_write_fd", &write_fd, py::arg("fd"), "Internal (Filter.save): write the serialized filter to fd.");
    cls.def("_write_to", &write_to, py::arg("write"),
            "Internal (Filter.save of a file object or URL): the serialized filter, passed to write() in chunks.");
    cls.def_static("_read_from", &read_from, py::arg("read"),
                   "Internal (Filter.load of a file object or URL): a filter read with read() in chunks.");
}

}  // namespace cuckoo_py
