#include "names.hpp"

#include "entry_points.hpp"

#include <string>
#include <vector>

namespace binding {

using namespace std::string_literals;

const element_type element_types[] = {
    {tb::dtype::float32, "float32", "float32"},
    {tb::dtype::float16, "float16", "float16"},
    {tb::dtype::bfloat16, "bfloat16", "bfloat16"},
    {tb::dtype::float64, "float64", nullptr},
    {tb::dtype::float8_e4m3fn, "float8_e4m3fn", "fp8_e4m3"},
    {tb::dtype::float8_e5m2, "float8_e5m2", "fp8_e5m2"},
    {tb::dtype::int8, "int8", nullptr},
    {tb::dtype::uint8, "uint8", nullptr},
    {tb::dtype::int16, "int16", nullptr},
    {tb::dtype::uint16, "uint16", nullptr},
    {tb::dtype::int32, "int32", nullptr},
    {tb::dtype::uint32, "uint32", nullptr},
    {tb::dtype::int64, "int64", nullptr},
    {tb::dtype::uint64, "uint64", nullptr},
    {tb::dtype::bool8, "bool", nullptr},
};
const std::size_t element_type_count = sizeof element_types / sizeof element_types[0];

namespace {

// The table is indexed by code, and every code has a row.
constexpr bool codes_in_order() {
    constexpr tb::dtype order[] = {
        tb::dtype::float32,       tb::dtype::float16,     tb::dtype::bfloat16, tb::dtype::float64,
        tb::dtype::float8_e4m3fn, tb::dtype::float8_e5m2, tb::dtype::int8,     tb::dtype::uint8,
        tb::dtype::int16,         tb::dtype::uint16,      tb::dtype::int32,    tb::dtype::uint32,
        tb::dtype::int64,         tb::dtype::uint64,      tb::dtype::bool8};
    for (std::size_t i = 0; i < sizeof order / sizeof order[0]; ++i)
        if (static_cast<std::size_t>(order[i]) != i) return false;
    return static_cast<std::size_t>(tb::dtype::bool8) + 1 == sizeof order / sizeof order[0];
}
static_assert(codes_in_order(), "element_types must list every core dtype in code order");

struct named_code {
    std::string name;
    int code;
    PyObject* interned;  // the name as a str, interned (kept for the process)
};

struct kind_table {
    const char* kind;  // the argument's name, as messages call it
    std::vector<named_code> names;
    std::string accepted;  // "'a', 'b' or 'c'"
};

kind_table tables[name_kind_count];

kind_table& table(name_kind kind) { return tables[static_cast<int>(kind)]; }

}  // namespace

bool intern_names() {
    if (!table(name_kind::dtype).names.empty()) return true;  // (a second interpreter's import)
    std::vector<named_code> dtypes;
    for (std::size_t i = 0; i < element_type_count; ++i) {
        if (element_types[i].output_name != nullptr)
            dtypes.push_back({element_types[i].output_name, static_cast<int>(i), nullptr});
    }
    const int host = static_cast<int>(tb::host_byte_order);
    table(name_kind::dtype) = {"dtype", dtypes, {}};
    table(name_kind::byteorder) = {
        "byteorder", {{"little", 0, nullptr}, {"big", 1, nullptr}, {"native", host, nullptr}}, {}};
    table(name_kind::float_format) = {
        "float_format",
        {{"repr", static_cast<int>(tb::float_format::repr), nullptr},
         {"shortest", static_cast<int>(tb::float_format::shortest), nullptr},
         {"orjson", static_cast<int>(tb::float_format::orjson), nullptr}},
        {}};
    table(name_kind::encoding_format) = {
        "encoding_format", {{"float", 0, nullptr}, {"base64", 1, nullptr}}, {}};
    std::vector<named_code> layouts;  // the core's table of layouts, in its order
    for (std::size_t i = 0; i < tb::response_layout_count; ++i)
        layouts.push_back({tb::response_layouts[i].name, static_cast<int>(i), nullptr});
    table(name_kind::layout) = {"layout", layouts, {}};
    for (kind_table& t : tables) {
        for (std::size_t i = 0; i < t.names.size(); ++i) {
            named_code& n = t.names[i];
            n.interned = PyUnicode_InternFromString(n.name.c_str());
            if (n.interned == nullptr) return false;
            t.accepted += (i == 0 ? "'" : i + 1 == t.names.size() ? " or '" : ", '") + n.name + "'";
        }
    }
    return true;
}

int resolve(name_kind kind, PyObject* name) {
    const kind_table& t = table(kind);
    for (const named_code& n : t.names)  // a call site's literal is interned: one comparison
        if (name == n.interned) return n.code;
    if (PyUnicode_Check(name)) {
        for (const named_code& n : t.names)
            if (PyUnicode_Compare(name, n.interned) == 0) return n.code;
    }
    raise(PyExc_ValueError,
          "unknown "s + t.kind + " " + repr_of(name) + "; expected " + t.accepted);
}

tb::dtype output_dtype(PyObject* name) {
    return name == nullptr ? tb::dtype::float32
                           : static_cast<tb::dtype>(resolve(name_kind::dtype, name));
}

tb::byte_order byte_order(PyObject* name) {
    return name == nullptr ? tb::byte_order::little
                           : static_cast<tb::byte_order>(resolve(name_kind::byteorder, name));
}

tb::float_format float_format(PyObject* name) {
    return name == nullptr ? tb::float_format::repr
                           : static_cast<tb::float_format>(resolve(name_kind::float_format, name));
}

const tb::response_layout& response_layout(PyObject* name) {
    return name == nullptr ? tb::openai_response_layout()
                           : tb::response_layouts[resolve(name_kind::layout, name)];
}

PyObject* element_types_tuple() {
    ref rows(PyTuple_New(static_cast<Py_ssize_t>(element_type_count)));
    if (!rows) return nullptr;
    for (std::size_t i = 0; i < element_type_count; ++i) {
        const element_type& e = element_types[i];
        PyObject* row = Py_BuildValue("(sinsz)", tb::to_string(e.type), static_cast<int>(i),
                                      static_cast<Py_ssize_t>(tb::dtype_size(e.type)), e.torch_name,
                                      e.output_name);
        if (row == nullptr) return nullptr;
        PyTuple_SET_ITEM(rows.get(), static_cast<Py_ssize_t>(i), row);
    }
    return rows.release();
}

namespace {

PyObject* resolve_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return guarded([&] {
        if (nargs != 2) raise(PyExc_TypeError, "_resolve takes 2 arguments (kind, name)");
        for (int k = 0; k < name_kind_count; ++k) {
            if (PyUnicode_Check(args[0]) &&
                PyUnicode_CompareWithASCIIString(args[0], tables[k].kind) == 0) {
                return PyLong_FromLong(resolve(static_cast<name_kind>(k), args[1]));
            }
        }
        raise(PyExc_ValueError, "unknown kind of name " + repr_of(args[0]));
    });
}

// _check_names(*, encoding_format=, float_format=, dtype=, byteorder=, layout=): each name
// given resolved as its keyword's kind, in the order given (one call where a function checks
// several).
PyObject* check_names_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    return guarded([&] {
        const Py_ssize_t given = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
        if (nargs != 0) raise(PyExc_TypeError, "_check_names takes keyword arguments only");
        for (Py_ssize_t i = 0; i < given; ++i) {
            PyObject* key = PyTuple_GET_ITEM(kwnames, i);
            int kind = 0;
            while (kind < name_kind_count &&
                   PyUnicode_CompareWithASCIIString(key, tables[kind].kind) != 0)
                ++kind;
            if (kind == name_kind_count)
                raise(PyExc_TypeError, "unknown kind of name " + repr_of(key));
            resolve(static_cast<name_kind>(kind), args[i]);
        }
        Py_RETURN_NONE;
    });
}

}  // namespace

PyMethodDef name_methods[] = {
    {"_resolve", as_method(resolve_entry), METH_FASTCALL,
     "_resolve(kind, name, /)\n--\n\n"
     "The code of a dtype, byteorder, float_format, encoding_format or layout name (kind), as "
     "every entry point resolves it; ValueError naming the accepted names otherwise."},
    {"_check_names", as_method(check_names_entry), METH_FASTCALL | METH_KEYWORDS,
     "_check_names(*, encoding_format=None, float_format=None, dtype=None, byteorder=None, "
     "layout=None)\n--\n\n"
     "Resolves each name given, as its keyword's kind, in order; ValueError for the first unknown "
     "one."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace binding
