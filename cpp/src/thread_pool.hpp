// The threads that `threads=N` splits a batch across: started once, kept for the process.
#pragma once

#include <cstddef>
#include <functional>

namespace tensorb64 {

// Runs task(0), ..., task(parts - 1), the calling thread taking its share, and returns when all
// have run. Uses at most `parts - 1` pool threads; the pool grows to the largest such request
// (up to a fixed cap) and never shrinks. If no thread can be started the caller runs every part.
// `task` must not throw.
void run_parts(std::size_t parts, const std::function<void(std::size_t)>& task);

}  // namespace tensorb64
