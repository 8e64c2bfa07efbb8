#include "arguments.hpp"

#include "entry_points.hpp"

#include <string>

namespace binding {

using namespace std::string_literals;

call_args parse_call(const char* function, PyObject* const* args, Py_ssize_t nargs,
                     PyObject* kwnames, bool takes_threads, options taken) {
    if (nargs != 1) {
        raise(PyExc_TypeError,
              function + " takes exactly one positional argument (the embeddings), got "s +
                  std::to_string(nargs));
    }
    call_args out;
    out.x = args[0];
    const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t i = 0; i < nkw; ++i) {
        PyObject* key = PyTuple_GET_ITEM(kwnames, i);
        PyObject* value = args[nargs + i];
        // Keyword names from a call site are interned: compare pointers first.
        const auto is = [key](PyObject* name) {
            return key == name || PyUnicode_Compare(key, name) == 0;
        };
        if (taken == options::float_text) {
            if (is(interned.float_format)) {
                out.float_format = value;
                continue;
            }
            if (takes_threads && is(interned.threads)) {
                out.threads = value;
                continue;
            }
            PyErr_Clear();
            raise(PyExc_TypeError, function + " got an unexpected keyword argument "s +
                                       repr_of(key) + "; it takes float_format= and threads=");
        }
        if (is(interned.dtype)) {
            out.dtype = value;
        } else if (is(interned.byteorder)) {
            out.byteorder = value;
        } else if (takes_threads && is(interned.threads)) {
            out.threads = value;
        } else {
            PyErr_Clear();
            raise(PyExc_TypeError,
                  function + " got an unexpected keyword argument "s + repr_of(key) +
                      "; it takes dtype=, byteorder=" + (takes_threads ? " and threads=" : ""));
        }
    }
    return out;
}

// More threads than this cannot help on any machine this runs on (the core's pool cap).
constexpr long max_threads = 256;

unsigned thread_count(PyObject* value) {
    if (value == nullptr) return 1;
    long threads = -1;
    if (!PyBool_Check(value)) {
        ref index(PyNumber_Index(value));  // ints and numpy integers
        if (index) {
            int overflow = 0;
            threads = PyLong_AsLongAndOverflow(index.get(), &overflow);
            if (overflow != 0) threads = -1;
        }
        PyErr_Clear();
    }
    if (threads < 1 || threads > max_threads) {
        raise(PyExc_ValueError, "threads must be an int from 1 to " + std::to_string(max_threads) +
                                    " (a Python or numpy integer), got " + repr_of(value));
    }
    return static_cast<unsigned>(threads);
}

body_args parse_body_args(const char* function, PyObject* const* args, Py_ssize_t nargs,
                          Py_ssize_t expected) {
    if (nargs != expected) {
        raise(PyExc_TypeError, function + " takes "s + std::to_string(expected) +
                                   " arguments, got " + std::to_string(nargs));
    }
    const int leading_comma = PyObject_IsTrue(args[expected - 1]);
    if (leading_comma < 0) throw python_error{};
    body_args parsed{args[0],
                     args[expected - 6],
                     args[expected - 5],
                     0,
                     thread_count(args[expected - 3]),
                     &response_layout(args[expected - 2]),
                     leading_comma != 0};
    if (!PyBytes_Check(parsed.head) || !PyBytes_Check(parsed.tail))
        raise(PyExc_TypeError, "head and tail must be bytes");
    parsed.first_index = PyLong_AsSize_t(args[expected - 4]);
    if (parsed.first_index == static_cast<std::size_t>(-1) && PyErr_Occurred())
        throw python_error{};
    return parsed;
}

namespace {

PyObject* check_threads_entry(PyObject*, PyObject* threads) {
    return guarded([&] { return PyLong_FromUnsignedLong(thread_count(threads)); });
}

}  // namespace

PyMethodDef argument_methods[] = {
    {"_check_threads", check_threads_entry, METH_O,
     "_check_threads(threads, /)\n--\n\nthreads as an int, or the ValueError every entry point "
     "raises for it."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace binding
