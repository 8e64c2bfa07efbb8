// The threads that `threads=N` splits a batch across: started once, kept for the process; and the
// one way every row writer (base64 and raw rows, float text, response bodies) splits its rows.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <limits>
#include <mutex>

namespace tensorb64 {

// Runs task(0), ..., task(parts - 1), the calling thread taking its share, and returns when all
// have run. Uses at most `parts - 1` pool threads; the pool grows to the largest such request
// (up to a fixed cap) and never shrinks. If no thread can be started the caller runs every part.
// `task` must not throw.
void run_parts(std::size_t parts, const std::function<void(std::size_t)>& task);

// The lock held while the pool is created (for the tests: a fork must not leave it held in the
// child, whichever thread of the parent holds it).
std::mutex& pool_creation_lock() noexcept;

// How many parts `threads` threads split `rows` rows into: at least one, at most one a row, and
// at most `worth` (how many the work pays for: a thread costs more than it saves below a size).
inline std::size_t row_parts(unsigned threads, std::size_t rows,
                             std::size_t worth = std::numeric_limits<std::size_t>::max()) noexcept {
    return std::max<std::size_t>(std::min<std::size_t>({threads, rows, worth}), 1);
}

// Runs task(part, first, count) over `parts` contiguous runs of the rows [0, rows), in order of
// part, each of ceil(rows / parts) rows but the last ones (which may be empty): on the calling
// thread alone for one part, else through run_parts. `task` must not throw.
template <class Task>
void run_row_parts(std::size_t rows, std::size_t parts, const Task& task) {
    if (parts <= 1) {
        task(std::size_t{0}, std::size_t{0}, rows);
        return;
    }
    const std::size_t per_part = (rows + parts - 1) / parts;
    run_parts(parts, [&](std::size_t part) {
        const std::size_t first = std::min(part * per_part, rows);
        task(part, first, std::min(per_part, rows - first));
    });
}

}  // namespace tensorb64
