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

#include <atomic>
#include <cstddef>
#include <utility>

#include "python_api.hpp"

namespace binding {

// Outputs below this size are written as they come. Where memory is reused (resident already),
// preparing costs the probe that finds it so (mincore: about 2 us on the build machine, more when
// it is busy), several percent of a 1 MiB base64 body's time (the 64x3072 one, about 30 us), a
// few at 2 MiB, under 1% from 8 MiB and for any float text; where memory is fresh, it saves a
// third of a 1 MiB body's time, and from 2 MiB, where huge pages begin to fit, three quarters or
// more (the bench's body section: the threshold sweep and the page costs).
constexpr std::size_t default_prepare_from_bytes = 2 * 1024 * 1024;

// The threshold in force: default_prepare_from_bytes, or what the benchmark's threshold sweep set
// (_set_page_preparation).
inline std::atomic<std::size_t> prepare_from_setting{default_prepare_from_bytes};
inline std::size_t prepare_from_bytes() noexcept {
    return prepare_from_setting.load(std::memory_order_relaxed);
}

// Whether the page holding `address` is resident (mincore; false where unknown).
bool page_resident(const void* address) noexcept;

// page_resident, for an output about to be prepared: counted (_page_preparation_counts); true
// where preparing is switched off (_set_page_preparation), as there is then nothing to do.
bool found_resident(const void* address) noexcept;

// Prepares the whole pages of [begin, begin + size) for writing (the partial pages at either end
// are left: they may belong to a neighbour, and are touched by the header's write anyway), unless
// `probe` finds its last whole page resident: memory the allocator reused was written to its end
// by an earlier output, while a fresh block is untouched but for its header at the front; and
// asking the kernel to populate resident memory would walk its page tables for nothing (about
// 0.2 us a 4 KiB page, as long as writing base64 into it). Safe without the GIL; never fails.
void prepare_pages(void* begin, std::size_t size, bool probe = true) noexcept;

// The one call every allocation site makes before its output is written: prepare_pages for a
// large output, nothing for a small one.
inline void prepare_for_writing(void* begin, std::size_t size) noexcept {
    if (size >= prepare_from_bytes()) prepare_pages(begin, size);
}

// prepare_for_writing from a call that holds the GIL: released while the kernel zeroes the pages.
inline void prepare_releasing_gil(void* begin, std::size_t size) {
    if (size < prepare_from_bytes()) return;
    gil_released_if released(true);
    prepare_pages(begin, size);
}

// Blocks allocated one after another for one output (block(i): the (begin, size) of block i, the
// part of it that will be written), each prepared alone: all of them unless the last is resident
// (one probe: blocks allocated together come from memory reused together, or fresh together).
template <class Block>
void prepare_each(std::size_t count, Block&& block) noexcept {
    if (count == 0) return;
    const auto [last, last_size] = block(count - 1);
    if (last_size == 0 || found_resident(last + last_size - 1)) return;
    for (std::size_t i = 0; i < count; ++i) {
        const auto [begin, size] = block(i);
        prepare_pages(begin, size, false);
    }
}

// The output of one call made of many blocks (an object a row): block(i) is the (begin, size) of
// block i. Prepared as one range where the blocks follow one another with less than a page
// between each and the next (as consecutive allocations do: the gaps are their headers, and no
// page of anyone else's lies between), else each alone. Safe without the GIL.
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
    if (total < prepare_from_bytes() || count == 0) return;
    if (together) {
        char* const first = block(0).first;
        prepare_pages(first, static_cast<std::size_t>(end - first));
        return;
    }
    prepare_each(count, block);
}

// An output written front to back into memory made at a bound whose length is known only once it
// is written (float text): prepared in steps just ahead of the writer, each as far as the text
// written so far predicts the next piece will reach, never past the predicted end of the whole
// (the pages beyond the text stay untouched: they are given back when the object is trimmed to its
// length). Rows whose text is far shorter than the rows before them can leave one piece prepared
// past the end, given back with the rest at the trim.
class prepared_ahead {
public:
    // [begin, bound_end): the memory the text starts at and may run to; `rows` rows to write.
    prepared_ahead(char* begin, char* bound_end, std::size_t rows) noexcept
        : bound_end_(bound_end), prepared_(begin), piece_at_(begin), rows_(rows) {}

    // How many rows to write next, from row `done` whose text begins at `at`, having prepared
    // what those rows' text is predicted to take (the first piece, which the prediction is made
    // from, unprepared: a few pages).
    std::size_t next_piece(std::size_t done, char* at, std::size_t row_bound) noexcept;

    // The first piece: about this many bytes at the bound (at least one row), written into pages
    // faulted one at a time (a handful of them).
    static constexpr std::size_t first_piece_bytes = 64 * 1024;
    // Each later piece: about this much text, prepared just before it is written. Large enough
    // that the pieces' calls of the core (and a probe and two madvise calls each, about 5 us) cost
    // nothing beside their writing (2-3 ms), small enough that what a wrong prediction prepares
    // past the text (rows far shorter than those before them) is at most this and a huge page.
    static constexpr std::size_t piece_bytes = 4 * 1024 * 1024;
    // How much of the text predicted from the rows so far is prepared: a margin for rows a little
    // shorter than those, so that what is prepared is written all the same.
    static constexpr double predicted_share = 0.98;

private:
    char* bound_end_;
    char* prepared_;  // the end of what is prepared
    char* piece_at_;  // where the last piece began, and its rows: the prediction's evidence
    std::size_t piece_rows_ = 0;
    std::size_t rows_;
};

}  // namespace binding
