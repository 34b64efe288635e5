// The scalar calls of cuckoo.Filter (add, add_unique, discard, remove, count, __contains__ and
// the `in` operator) as plain CPython methods on the type, in place of pybind11 definitions.
//
// Why: for one key, pybind11's generic dispatch (building an argument list, trying overloads,
// loading type casters, casting the result back) costs more than the filter operation itself.
// Here a METH_FASTCALL method takes the key straight from the argument vector, hashes it from the
// object's own storage (hash_object: the bytes' data, the cached UTF-8 form of a str, an int's
// value; no temporary object) and returns a cached object (None, True, False) or a small int.
//
// One template does what the calls share, in this order: the uninitialised-object check (as
// BuiltOnlyCaster does for pybind11 methods), the one argument (positional or `key=`), hashing,
// the lock (none while no other thread is inside the filter, else shared for reads and exclusive
// for writes, as the pybind11 methods take it), and C++
// exceptions turned into Python ones by the module's translators (ReadOnlyError, ...). Each call
// is a small struct saying which lock it needs and what it does with the key's hash. The GIL
// stays held: one key's work is far shorter than releasing and re-taking it.
//
// This unit includes no pybind11 (it would compile pybind11's inline code for nothing, ~4-5
// CPU-s): the filter's state, the key hashing and the locks come from C-API-only headers, and
// what needs pybind11 (the filter behind an object, exception translation) is called out of
// line, in filter_binding.cpp.
#include "filter_state.hpp"
#include "key_objects.hpp"

namespace cuckoo_py {

namespace {

// Each call: `writes` (which lock), `name` and `doc` (the text signature line first, so that
// inspect.signature and the stub test see `(self, key)`), and `run`, called under the lock with
// the key's hash; it returns a new reference, or nullptr with a Python error set.
struct Add {
    static constexpr bool writes = true;
    static constexpr const char* name = "add";
    static constexpr const char* doc =
        "add($self, key)\n--\n\nAdd key (a multiset: adding twice stores it twice). Raises FilterFullError if no room is "
        "found; the filter is then unchanged.";
    static PyObject* run(FilterState& f, uint64_t h, PyObject*) {
        if (!f.core.insert_hash(h)) raise_full(f.core);
        Py_RETURN_NONE;
    }
};

struct AddUnique {
    static constexpr bool writes = true;
    static constexpr const char* name = "add_unique";
    static constexpr const char* doc =
        "add_unique($self, key)\n--\n\nAdd key unless it is (maybe) present. Returns True if it was added. A false "
        "positive makes it return False for a new key.";
    static PyObject* run(FilterState& f, uint64_t h, PyObject*) {
        bool was_new = false;
        if (!f.core.insert_unique_hash(h, was_new)) raise_full(f.core);
        return PyBool_FromLong(was_new);
    }
};

struct Discard {
    static constexpr bool writes = true;
    static constexpr const char* name = "discard";
    static constexpr const char* doc =
        "discard($self, key)\n--\n\nRemove one copy of key if present; returns whether one was removed. Only remove "
        "keys that were added: removing an absent key that is a false positive deletes another key's fingerprint. In a "
        "grown filter the copy is taken from the latest stage that matches, which is always safe; only a grown filter "
        "saved by an earlier release may refuse (False) a key that matches in two of its own stages.";
    static PyObject* run(FilterState& f, uint64_t h, PyObject*) { return PyBool_FromLong(f.core.erase_hash(h)); }
};

struct Remove {
    static constexpr bool writes = true;
    static constexpr const char* name = "remove";
    static constexpr const char* doc = "remove($self, key)\n--\n\nRemove one copy of key; raises KeyError if it is absent.";
    static PyObject* run(FilterState& f, uint64_t h, PyObject* key) {
        if (f.core.erase_hash(h)) Py_RETURN_NONE;
        PyErr_SetObject(PyExc_KeyError, key);  // like set.remove: the key itself
        return nullptr;
    }
};

struct Contains {
    static constexpr bool writes = false;
    static constexpr const char* name = "__contains__";
    static constexpr const char* doc = "__contains__($self, key)\n--\n\nWhether key is (maybe) present: `key in f`.";
    static PyObject* run(FilterState& f, uint64_t h, PyObject*) { return PyBool_FromLong(f.core.contains_hash(h)); }
};

struct Count {
    static constexpr bool writes = false;
    static constexpr const char* name = "count";
    static constexpr const char* doc =
        "count($self, key)\n--\n\nCopies of key's fingerprint in its two buckets: at least the times key was added and "
        "not removed.";
    static PyObject* run(FilterState& f, uint64_t h, PyObject*) {
        return PyLong_FromUnsignedLongLong(f.core.count_hash(h));
    }
};

// Call Op for `key` on the filter behind `self` (a Filter or a subclass instance: the method
// descriptor has checked the type).
template <class Op>
PyObject* call_with_key(PyObject* self, PyObject* key) {
    FilterState* f = filter_of(self);
    if (!f) return nullptr;
    uint64_t h;
    if (!hash_object(f->hasher, key, h)) return nullptr;
    try {
        // No other thread inside the filter: no lock needed (see alone_with_gil; Op::run touches
        // the filter only before it creates any Python object).
        if (alone_with_gil(*f)) return Op::run(*f, h, key);
        if constexpr (Op::writes) {
            WriteLock lock(*f);
            return Op::run(*f, h, key);
        } else {
            ReadLock lock(*f);
            return Op::run(*f, h, key);
        }
    } catch (...) {
        set_python_error_from_exception();  // a FilterFullError, ReadOnlyError, MemoryError, ...
    }
    return nullptr;
}

// The one argument of a scalar call: `f.add(k)` (the hot case: a positional argument, nothing
// else to look at) or `f.add(key=k)`, as the pybind11 definitions accepted.
PyObject* key_argument(const char* name, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs + nkw == 1) {
        if (nkw == 0) return args[0];
        PyObject* kw = PyTuple_GET_ITEM(kwnames, 0);
        if (PyUnicode_Check(kw) && PyUnicode_CompareWithASCIIString(kw, "key") == 0) return args[0];
        PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", name, kw);
        return nullptr;
    }
    PyErr_Format(PyExc_TypeError, "%s() takes exactly one argument (key), %zd given", name, nargs + nkw);
    return nullptr;
}

template <class Op>
PyObject* scalar_method(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    PyObject* key = key_argument(Op::name, args, nargs, kwnames);
    return key ? call_with_key<Op>(self, key) : nullptr;
}

// `key in f`: the sequence slot, same call as f.__contains__(key).
int contains_slot(PyObject* self, PyObject* key) {
    PyObject* found = call_with_key<Contains>(self, key);
    if (!found) return -1;
    const int result = found == Py_True;
    Py_DECREF(found);
    return result;
}

template <class Op>
PyMethodDef method_def() {
    PyMethodDef def{};
    def.ml_name = Op::name;
    def.ml_meth = reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&scalar_method<Op>));
    def.ml_flags = METH_FASTCALL | METH_KEYWORDS;
    def.ml_doc = Op::doc;
    return def;
}

}  // namespace

bool register_scalar_calls(PyTypeObject* type) {
    // The descriptors keep pointers to these definitions for the life of the type.
    static PyMethodDef defs[] = {method_def<Add>(), method_def<AddUnique>(), method_def<Discard>(),
                                 method_def<Remove>(), method_def<Contains>(), method_def<Count>()};
    for (PyMethodDef& def : defs) {
        PyObject* descriptor = PyDescr_NewMethod(type, &def);
        if (!descriptor) return false;
        const int failed = PyObject_SetAttrString(reinterpret_cast<PyObject*>(type), def.ml_name, descriptor);
        Py_DECREF(descriptor);
        if (failed) return false;
    }
    // Setting __contains__ made CPython point the slot at its generic wrapper (a method lookup
    // and call per `in`): point it at the direct function instead.
    auto* heap_type = reinterpret_cast<PyHeapTypeObject*>(type);
    heap_type->as_sequence.sq_contains = &contains_slot;
    type->tp_as_sequence = &heap_type->as_sequence;
    PyType_Modified(type);
    return true;
}

}  // namespace cuckoo_py
