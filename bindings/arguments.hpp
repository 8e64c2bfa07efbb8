// Argument parsing for the entry points: the input, the keyword options (resolved through
// names.hpp), threads=, and the positional arguments of the response-body entry points.
#pragma once

#include <cstddef>

#include "names.hpp"
#include "python_api.hpp"

namespace binding {

// The positional input and the keyword options of a METH_FASTCALL | METH_KEYWORDS call (null
// where not given).
struct call_args {
    PyObject* x = nullptr;
    PyObject* dtype = nullptr;
    PyObject* byteorder = nullptr;
    PyObject* threads = nullptr;
    PyObject* float_format = nullptr;
};

// The keywords an entry point takes besides threads=: dtype= and byteorder=, or float_format=.
enum class options { encoding, float_text };

// The input and the keyword options of a call; TypeError naming what the function takes.
call_args parse_call(const char* function, PyObject* const* args, Py_ssize_t nargs,
                     PyObject* kwnames, bool takes_threads, options taken = options::encoding);

// threads= as a count (1 when not given), or the ValueError every entry point raises for it.
unsigned thread_count(PyObject* value);

// The positional arguments of the response-body entry points:
// (x, <format arguments>..., head, tail, first_index, threads, layout, leading_comma).
struct body_args {
    PyObject* x;
    PyObject* head;
    PyObject* tail;
    std::size_t first_index;
    unsigned threads;
    const tb::response_layout* layout;
    bool leading_comma;
};

// `expected`: the number of arguments, all of them.
body_args parse_body_args(const char* function, PyObject* const* args, Py_ssize_t nargs,
                          Py_ssize_t expected);

}  // namespace binding
