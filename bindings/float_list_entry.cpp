// Rows given as Python lists of floats (what a server holds after .tolist(): SGLang's scheduler
// hands its API process such rows) read straight into a caller's float64 array, each value the
// double the float object holds, so that the core writes the body from the array: no
// numpy.array over nested lists, no per-value call.
#include <cstddef>
#include <string>

#include "entry_points.hpp"
#include "python_api.hpp"

namespace binding {

namespace {

// Where a row could not be read (read under the row's lock on a free-threaded build, raised after
// it is let go: an exception must not leave a critical section).
struct row_fault {
    enum kind { none, not_a_list, wrong_length, not_a_float } what = none;
    Py_ssize_t column = 0, length = 0;
};

// Reads `row` (a list of `length` float objects) into out[0, length).
row_fault read_row(PyObject* row, Py_ssize_t length, double* out) {
    if (!PyList_Check(row)) return {row_fault::not_a_list};
    row_fault fault;
#ifdef Py_GIL_DISABLED
    // Another thread may resize the list while it is read: its items are read under its lock.
    Py_BEGIN_CRITICAL_SECTION(row);
#endif
    const Py_ssize_t found = PyList_GET_SIZE(row);
    if (found != length) {
        fault = {row_fault::wrong_length, 0, found};
    } else {
        PyObject** items = PySequence_Fast_ITEMS(row);
        for (Py_ssize_t i = 0; i < length; ++i) {
            PyObject* item = items[i];
            // Exact floats only: a subclass could hold another value than its __float__ says, and
            // an int's double is not always its value (json writes the int); both are the
            // caller's to convert.
            if (!PyFloat_CheckExact(item)) {
                fault = {row_fault::not_a_float, i, 0};
                break;
            }
            out[i] = PyFloat_AS_DOUBLE(item);
        }
    }
#ifdef Py_GIL_DISABLED
    Py_END_CRITICAL_SECTION();
#endif
    return fault;
}

// _read_float_lists(rows, out, /): see the docstring below.
PyObject* read_float_lists_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return guarded([&]() -> PyObject* {
        if (nargs != 2) raise(PyExc_TypeError, "_read_float_lists takes (rows, out)");
        // A tuple of the rows: each held while it is read, whatever happens to the list.
        if (!PyList_Check(args[0]))
            raise(PyExc_TypeError, "rows must be a list of lists of floats");
        ref rows(PySequence_Tuple(args[0]));
        if (!rows) throw python_error{};
        held_buffer out;
        if (!out.acquire(args[1], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS)) throw python_error{};
        const Py_ssize_t count = PyTuple_GET_SIZE(rows.get());
        if (count == 0) {
            if (out.view.len != 0) raise(PyExc_ValueError, "out must be empty for no rows");
            Py_RETURN_NONE;
        }
        PyObject* first = PyTuple_GET_ITEM(rows.get(), 0);
        if (!PyList_Check(first)) raise(PyExc_TypeError, "row 0 is not a list");
        const Py_ssize_t length = PyList_GET_SIZE(first);
        if (out.view.len / static_cast<Py_ssize_t>(sizeof(double)) / count != length ||
            out.view.len != count * length * static_cast<Py_ssize_t>(sizeof(double)))
            raise(PyExc_ValueError,
                  "out must hold exactly len(rows) * len(rows[0]) float64 values");
        double* at = static_cast<double*>(out.view.buf);
        for (Py_ssize_t r = 0; r < count; ++r, at += length) {
            PyObject* row = PyTuple_GET_ITEM(rows.get(), r);
            const row_fault fault = read_row(row, length, at);
            switch (fault.what) {
                case row_fault::none: break;
                case row_fault::not_a_list:
                    raise(PyExc_TypeError, "row " + std::to_string(r) + " is not a list");
                case row_fault::wrong_length:
                    raise(PyExc_ValueError, "row " + std::to_string(r) + " has " +
                                                std::to_string(fault.length) +
                                                " values, row 0 has " + std::to_string(length));
                case row_fault::not_a_float: {
                    ref item(PySequence_GetItem(row, fault.column));  // (a new reference: safe)
                    PyErr_Clear();  // (the list may have shrunk since: the message then says so)
                    raise(PyExc_TypeError,
                          "row " + std::to_string(r) + ", column " + std::to_string(fault.column) +
                              " is not a float: " +
                              (item ? repr_of(item.get()) : std::string("(gone)")));
                }
            }
        }
        Py_RETURN_NONE;
    });
}

}  // namespace

PyMethodDef float_list_methods[] = {
    {"_read_float_lists", as_method(read_float_lists_entry), METH_FASTCALL,
     "_read_float_lists(rows, out, /)\n--\n\n"
     "Reads rows, a list of equally long lists of floats (exact floats: what .tolist() gives), "
     "into out, a writable C-contiguous buffer of exactly len(rows) * len(rows[0]) float64 values, "
     "each the double its float holds. TypeError naming the row (and column) of an item that is "
     "not a list (a float); ValueError for a row of another length or an out of another size."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace binding
