// Rows given as Python lists of floats (what a server holds after .tolist(): SGLang's scheduler
// hands its API process such rows) read straight into a caller's float64 array, each value the
// double the float object holds, so that the core writes the body from the array: no
// numpy.array over nested lists, no per-value call. Into a float32 array, each value is rounded
// as struct.pack("<f") rounds it (Dynamo's SGLang worker packs its rows so).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "entry_points.hpp"
#include "python_api.hpp"

namespace binding {

namespace {

// Where a row could not be read (read under the row's lock on a free-threaded build, raised after
// it is let go: an exception must not leave a critical section).
struct row_fault {
    enum kind { none, not_a_list, wrong_length, not_a_float, not_a_float32 } what = none;
    Py_ssize_t column = 0, length = 0;
};

// Whether no value of out[0, length) is NaN or infinite: one pass without a branch a value, which
// the compiler vectorises (a loop that stops at the first would not be).
bool all_finite(const float* out, Py_ssize_t length) {
    std::uint32_t exponent_all_ones = 0;
    for (Py_ssize_t i = 0; i < length; ++i) {
        std::uint32_t bits;
        std::memcpy(&bits, out + i, sizeof bits);
        exponent_all_ones |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
    }
    return exponent_all_ones == 0;
}

// Reads `row` (a list of `length` float objects) into out[0, length): doubles as they are, or
// floats rounded as struct.pack("<f") rounds them (the same C conversion, in the caller's rounding
// mode), where a value must give a finite float32: NaN, infinity and a value that rounds past
// float32's range (struct's OverflowError) are refused.
template <class Value>
row_fault read_row(PyObject* row, Py_ssize_t length, Value* out) {
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
            out[i] = static_cast<Value>(PyFloat_AS_DOUBLE(item));
        }
        if constexpr (std::is_same_v<Value, float>) {
            if (fault.what == row_fault::none && !all_finite(out, length)) {
                Py_ssize_t i = 0;
                while (std::isfinite(out[i])) ++i;
                fault = {row_fault::not_a_float32, i, 0};
            }
        }
    }
#ifdef Py_GIL_DISABLED
    Py_END_CRITICAL_SECTION();
#endif
    return fault;
}

// out's element type: 'd' (float64) or 'f' (float32) in the host's byte order, else 0.
char element_of(const Py_buffer& view) {
    const char* format = view.format != nullptr ? view.format : "B";
    if (*format == '@' || *format == '=') ++format;
    if (format[1] != '\0') return 0;
    if (format[0] == 'd' && view.itemsize == 8) return 'd';
    if (format[0] == 'f' && view.itemsize == 4) return 'f';
    return 0;
}

// Reads every row into out (float64 or float32 values), raising for the first that cannot be read.
template <class Value>
void read_rows(PyObject* rows, Py_ssize_t length, Value* at) {
    const Py_ssize_t count = PyTuple_GET_SIZE(rows);
    for (Py_ssize_t r = 0; r < count; ++r, at += length) {
        PyObject* row = PyTuple_GET_ITEM(rows, r);
        const row_fault fault = read_row(row, length, at);
        if (fault.what == row_fault::none) continue;
        const std::string where = "row " + std::to_string(r);
        if (fault.what == row_fault::not_a_list) raise(PyExc_TypeError, where + " is not a list");
        if (fault.what == row_fault::wrong_length)
            raise(PyExc_ValueError, where + " has " + std::to_string(fault.length) +
                                        " values, row 0 has " + std::to_string(length));
        ref item(PySequence_GetItem(row, fault.column));  // (a new reference: safe)
        PyErr_Clear();  // (the list may have shrunk since: the message then says so)
        const std::string value = item ? repr_of(item.get()) : std::string("(gone)");
        const std::string cell = where + ", column " + std::to_string(fault.column);
        if (fault.what == row_fault::not_a_float)
            raise(PyExc_TypeError, cell + " is not a float: " + value);
        raise(PyExc_ValueError, cell +
                                    " is not a finite float32 (NaN, infinity, or rounds past "
                                    "float32's range): " +
                                    value);
    }
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
        if (!out.acquire(args[1], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT))
            throw python_error{};
        const char element = element_of(out.view);
        if (element == 0)
            raise(PyExc_TypeError, "out must be a buffer of float64 or float32 values");
        const Py_ssize_t count = PyTuple_GET_SIZE(rows.get());
        if (count == 0) {
            if (out.view.len != 0) raise(PyExc_ValueError, "out must be empty for no rows");
            Py_RETURN_NONE;
        }
        PyObject* first = PyTuple_GET_ITEM(rows.get(), 0);
        if (!PyList_Check(first)) raise(PyExc_TypeError, "row 0 is not a list");
        const Py_ssize_t length = PyList_GET_SIZE(first);
        if (out.view.len / out.view.itemsize / count != length ||
            out.view.len != count * length * out.view.itemsize)
            raise(PyExc_ValueError, "out must hold exactly len(rows) * len(rows[0]) values");
        if (element == 'd') {
            read_rows(rows.get(), length, static_cast<double*>(out.view.buf));
        } else {
            read_rows(rows.get(), length, static_cast<float*>(out.view.buf));
        }
        Py_RETURN_NONE;
    });
}

}  // namespace

PyMethodDef float_list_methods[] = {
    {"_read_float_lists", as_method(read_float_lists_entry), METH_FASTCALL,
     "_read_float_lists(rows, out, /)\n--\n\n"
     "Reads rows, a list of equally long lists of floats (exact floats: what .tolist() gives), "
     "into out, a writable C-contiguous buffer of exactly len(rows) * len(rows[0]) values: "
     "float64, each the double its float holds, or float32, each rounded as struct.pack('<f') "
     "rounds it. TypeError naming the row (and column) of an item that is not a list (a float), "
     "or for an out of another type; ValueError for a row of another length, an out of another "
     "size, or (float32) a value that is NaN, infinite or rounds past float32's range."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace binding
