// The memory of a large output, prepared in one step before the core writes it: the binding
// allocates every output (bytes, str, the arrays it is handed to fill), and a block that large is
// fresh memory from the kernel whenever the allocator mapped it anew (glibc maps each block above
// its mmap threshold on its own, 128 KiB in a fresh process, up to 32 MiB after a large free), so
// each of its 4 KiB pages would fault on first write (2-20 us each on a VM, more than writing
// the page). Prepared instead:
//  * transparent huge pages asked for (madvise MADV_HUGEPAGE) over the 2 MiB-aligned interior of
//    the block, where the kernel grants them in `madvise` mode: one fault, one zeroing pass, per
//    2 MiB;
//  * every page faulted in by one call (MADV_POPULATE_WRITE, Linux 5.14+) rather than one trap a
//    page.
// Both are hints: a kernel without them (EINVAL), another OS, a memory limit (ENOMEM) leave the
// pages to fault as they would have, silently. Only pages inside the block and inside what will be
// written are touched, so the process never holds more memory than the result.
#pragma once

#include <cstddef>
#include <utility>

#include "python_api.hpp"

namespace binding {

// Outputs below this size are written as they come. Measured (benchmarks/page_preparation.py,
// docs/limits.md): preparing costs one or two system calls (about 1 us, more with a heap's VMA
// split) even where the memory is already resident, as a block the allocator reuses is; that is
// lost in the writing of a block this large, while the faults it saves, in a fresh or trimmed
// heap, cost hundreds of microseconds.
constexpr std::size_t prepare_from_bytes = 1024 * 1024;

// Prepares the whole pages of [begin, begin + size) for writing (the partial pages at either end
// are left: they may belong to a neighbour, and are touched by the header's write anyway). Safe
// without the GIL; never fails.
void prepare_pages(void* begin, std::size_t size) noexcept;

// The one call every allocation site makes before its output is written: prepare_pages for a
// large output, nothing for a small one.
inline void prepare_for_writing(void* begin, std::size_t size) noexcept {
    if (size >= prepare_from_bytes) prepare_pages(begin, size);
}

// prepare_for_writing from a call that holds the GIL: released while the kernel zeroes the pages.
inline void prepare_releasing_gil(void* begin, std::size_t size) {
    if (size < prepare_from_bytes) return;
    gil_released_if released(true);
    prepare_pages(begin, size);
}

// The output of one call made of many blocks (an object a row): block(i) is the (begin, size) of
// block i. Prepared as one range where the blocks follow one another with less than a page
// between each and the next (as consecutive allocations do: the gaps are their headers, and no
// page of anyone else's lies between), else each large block alone. Safe without the GIL.
template <class Block>
void prepare_blocks(std::size_t count, Block&& block) noexcept {
    constexpr std::size_t small_gap = 4096;
    std::size_t total = 0;
    bool together = true;
    char* end = nullptr;
    for (std::size_t i = 0; i < count; ++i) {
        const auto [begin, size] = block(i);
        together = together && (i == 0 || (begin >= end && begin - end < small_gap));
        end = begin + size;
        total += size;
    }
    if (total < prepare_from_bytes || count == 0) return;
    if (together) {
        char* const first = block(0).first;
        prepare_pages(first, static_cast<std::size_t>(end - first));
        return;
    }
    for (std::size_t i = 0; i < count; ++i) {
        const auto [begin, size] = block(i);
        prepare_for_writing(begin, size);
    }
}

// An output written front to back into memory made at a bound whose length is known only once it
// is written (float text): prepared in steps just ahead of the writer, each as far as the text
// written so far predicts the text will reach, never past it (the pages beyond the text stay
// untouched: they are given back when the object is trimmed to its length).
class prepared_ahead {
public:
    // [begin, bound_end): the memory the text starts at and may run to; `rows` rows to write.
    prepared_ahead(char* begin, char* bound_end, std::size_t rows) noexcept
        : begin_(begin), bound_end_(bound_end), prepared_(begin), rows_(rows) {}

    // How many rows to write next, from row `done` whose text begins at `at`, having prepared
    // what those rows' text is predicted to take (the first piece, which the prediction is made
    // from, unprepared: a few pages).
    std::size_t next_piece(std::size_t done, char* at, std::size_t row_bound) noexcept;

    // The first piece: about this many bytes at the bound (at least one row), written into pages
    // faulted one at a time (a handful of them).
    static constexpr std::size_t first_piece_bytes = 64 * 1024;
    // Each later piece: about this much text, prepared just before it is written. Large enough
    // that the pieces' calls of the core cost nothing beside them, small enough that a prediction
    // wrong for the last piece prepares little that is not written.
    static constexpr std::size_t piece_bytes = 8 * 1024 * 1024;
    // How much of the text predicted from the rows so far is prepared: a margin for rows a little
    // shorter than those, so that what is prepared is written all the same.
    static constexpr double predicted_share = 0.98;

private:
    char* begin_;
    char* bound_end_;
    char* prepared_;
    std::size_t rows_;
};

}  // namespace binding
