// libFuzzer target for the body reader (tensorb64/body_reader.hpp): any bytes as a response body,
// read from an exact-size heap block into an exact-size result (ASan catches a byte read or written
// too far). The first byte chooses the options (stored type and byte order, widen, threads); the
// rest is the body. Whatever it is, the reader returns: an error, or a result whose layout matches
// what it allocated, the same with 3 threads as with one. The allocator is called once, or (the
// careful reading after a wrong guess of a row's end: body_allocator's contract) a second time for
// a layout of another shape, never more; the corpus's second_allocation_* bodies take that path.
#include <cstring>
#include <memory>

#include "harness.hpp"
#include "tensorb64/body_reader.hpp"

using namespace hardening;

namespace {

struct result_block {
    std::unique_ptr<exact_buffer> block;
    tb::body_layout first;  // the layout of the first call
    int calls = 0;
};

bool same_shape(const tb::body_layout& a, const tb::body_layout& b) {
    return a.rows == b.rows && a.row_length == b.row_length && a.encoding == b.encoding &&
           a.element_size == b.element_size;
}

void* allocate(void* context, const tb::body_layout& layout) {
    auto* r = static_cast<result_block*>(context);
    if (++r->calls == 1) {
        r->first = layout;
    } else if (r->calls > 2 || same_shape(layout, r->first)) {
        __builtin_trap();
    }
    r->block.reset(new exact_buffer(layout.rows * layout.row_length * layout.element_size));
    return r->block->data;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* input, std::size_t size) {
    if (size < 1) return 0;
    static const tb::dtype stored[] = {tb::dtype::float32, tb::dtype::float16, tb::dtype::bfloat16,
                                       tb::dtype::float8_e4m3fn};
    tb::body_options options;
    options.stored = {stored[input[0] & 3],
                      (input[0] & 4) ? tb::byte_order::big : tb::byte_order::little};
    options.widen = (input[0] & 8) == 0;
    options.allow_bom = (input[0] & 16) != 0;
    exact_buffer body(size - 1);
    if (size > 1) std::memcpy(body.data, input + 1, size - 1);
    const char* text = reinterpret_cast<const char*>(body.data);

    result_block one;
    tb::body_layout layout;
    const tb::body_error error =
        tb::read_embeddings_body(text, size - 1, options, allocate, &one, &layout);
    if (error.status != tb::body_status::ok) {
        if (error.offset > size - 1) __builtin_trap();
        (void)tb::to_string(error);
        return 0;
    }
    if (one.calls == 0 || one.block->size != layout.rows * layout.row_length * layout.element_size)
        __builtin_trap();
    if (layout.model.present && layout.model.offset + layout.model.length > size - 1)
        __builtin_trap();
    if (layout.usage.present && layout.usage.offset + layout.usage.length > size - 1)
        __builtin_trap();

    options.threads = 3;
    result_block three;
    tb::body_layout layout3;
    const tb::body_error error3 =
        tb::read_embeddings_body(text, size - 1, options, allocate, &three, &layout3);
    if (error3.status != tb::body_status::ok || layout3.rows != layout.rows ||
        std::memcmp(three.block->data, one.block->data, one.block->size) != 0) {
        __builtin_trap();
    }
    return 0;
}
