// The body reader's careful reading on its own, for tests only (not in the public headers): the
// fuzzer's differential check (hardening/fuzz_body.cpp) and body_reader_tests compare what
// read_embeddings_body gives with what this gives for the same body. A guessed row end (see the
// top of body_reader.cpp) must never change the result: the same array bit for bit, or the same
// error, byte offset included.
#pragma once

#include <cstddef>
#include <vector>

#include "tensorb64/body_reader.hpp"

namespace tensorb64 {
namespace detail {

// read_embeddings_body's contract, read without guessing any row's end: every string scanned,
// every list read in full. The path read_embeddings_body takes after a wrong guess, taken from
// the start. `embeddings` may be null. Slower than read_embeddings_body; nothing else calls it.
body_error read_embeddings_body_carefully(const char* body, std::size_t size,
                                          const body_options& options, body_allocator allocate,
                                          void* context, body_layout* layout,
                                          std::vector<byte_span>* embeddings);

}  // namespace detail
}  // namespace tensorb64
