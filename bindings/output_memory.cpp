#include "output_memory.hpp"

#include "entry_points.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace binding {

namespace {

// The test hooks' state (_set_page_preparation) and what was done (_page_preparation_counts):
// relaxed atomics, as every thread may prepare at once without the GIL.
std::atomic<bool> preparation_enabled{true};
std::atomic<int> injected_error{0};  // an errno every madvise call fails with, in place of the call
std::atomic<std::uint64_t> prepared_count{0}, resident_count{0}, huge_advised_count{0},
    populated_count{0}, refused_count{0};

#if defined(__linux__)

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14's value, for older headers; older kernels: EINVAL
#endif

// madvise, or the error injected in its place: 0 or an errno.
int advise(std::uintptr_t from, std::uintptr_t to, int advice) noexcept {
    const int injected = injected_error.load(std::memory_order_relaxed);
    if (injected != 0) return injected;
    return madvise(reinterpret_cast<void*>(from), to - from, advice) == 0 ? 0 : errno;
}

std::uintptr_t page_size() noexcept {
    static const std::uintptr_t page = [] {
        const long size = sysconf(_SC_PAGESIZE);
        return size > 0 ? static_cast<std::uintptr_t>(size) : std::uintptr_t{4096};
    }();
    return page;
}

// The size of a huge page the kernel maps with one page-table entry of the level above the last:
// a page table's worth of pages (8-byte entries): 2 MiB with 4 KiB pages (x86-64, arm64), 32 MiB
// with 16 KiB and 512 MiB with 64 KiB pages (arm64).
std::uintptr_t huge_page_size() noexcept { return page_size() * (page_size() / 8); }

#endif

void count(std::atomic<std::uint64_t>& counter) noexcept {
    counter.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

bool page_resident(const void* address) noexcept {
#if defined(__linux__)
    const std::uintptr_t page = page_size();
    unsigned char resident = 0;
    return mincore(reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(address) & ~(page - 1)),
                   page, &resident) == 0 &&
           (resident & 1) != 0;
#else
    (void)address;
    return false;
#endif
}

bool found_resident(const void* address) noexcept {
    if (!preparation_enabled.load(std::memory_order_relaxed)) return true;  // (nothing to do)
    count(prepared_count);
    const bool resident = page_resident(address);
    if (resident) count(resident_count);
    return resident;
}

void prepare_pages(void* begin, std::size_t size, bool probe) noexcept {
#if defined(__linux__)
    if (!preparation_enabled.load(std::memory_order_relaxed)) return;
    const std::uintptr_t page = page_size(), huge = huge_page_size();
    const auto start = reinterpret_cast<std::uintptr_t>(begin);
    const std::uintptr_t from = (start + page - 1) & ~(page - 1), to = (start + size) & ~(page - 1);
    if (from >= to) return;
    if (probe && found_resident(reinterpret_cast<void*>(to - page))) return;
    // Huge pages only where a whole one lies inside the range: the kernel maps one only where its
    // aligned 2 MiB is inside a region so advised, and the block's first and last 2 MiB are shared
    // with whatever the allocator put beside it.
    const std::uintptr_t huge_from = (from + huge - 1) & ~(huge - 1), huge_to = to & ~(huge - 1);
    if (huge_from < huge_to)
        count(advise(huge_from, huge_to, MADV_HUGEPAGE) == 0 ? huge_advised_count : refused_count);
    count(advise(from, to, MADV_POPULATE_WRITE) == 0 ? populated_count : refused_count);
#else
    (void)begin;
    (void)size;
    (void)probe;
#endif
}

std::size_t prepared_ahead::next_piece(std::size_t done, char* at, std::size_t row_bound) noexcept {
    const std::size_t left = rows_ - done;
    std::size_t piece = 0;
    if (done == 0) {
        piece = std::clamp<std::size_t>(first_piece_bytes / row_bound, 1, left);
    } else {
        // The text a row takes, as the last piece wrote it (rows of another kind of values,
        // shorter, change the prediction within a piece).
        const double per_row =
            std::max(static_cast<double>(at - piece_at_) / static_cast<double>(piece_rows_), 1.0);
        piece = std::clamp<std::size_t>(
            static_cast<std::size_t>(static_cast<double>(piece_bytes) / per_row), 1, left);
        // Prepared up to the end of this piece's predicted text, rounded up to a huge page (the
        // next piece writes on into it), but never past the predicted end of the whole text less
        // a margin for rows a little shorter than those so far, nor past the bound.
        const auto room = static_cast<std::size_t>(bound_end_ - at);
        char* const last = at + std::min(static_cast<std::size_t>(
                                             per_row * static_cast<double>(left) * predicted_share),
                                         room);
        char* want =
            at + std::min(static_cast<std::size_t>(per_row * static_cast<double>(piece)), room);
#if defined(__linux__)
        const std::uintptr_t huge = huge_page_size();
        want = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(want) + huge - 1) &
                                       ~(huge - 1));
#endif
        want = std::min(want, last);
        char* const from = std::max(prepared_, at);
        if (want > from) {
            prepare_pages(from, static_cast<std::size_t>(want - from));
            prepared_ = want;
        }
    }
    piece_at_ = at;
    piece_rows_ = piece;
    return piece;
}

namespace {

// _set_page_preparation(enabled, fail_with, from_bytes=0, /): a test and benchmark hook. enabled
// False: outputs are written unprepared; fail_with an errno (0: none) that every madvise call then
// fails with, in place of the call (a kernel without MADV_POPULATE_WRITE: EINVAL); from_bytes the
// threshold (0: the default).
PyObject* set_page_preparation_entry(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return guarded([&] {
        if (nargs != 2 && nargs != 3)
            raise(PyExc_TypeError, "_set_page_preparation takes 2 or 3 arguments");
        std::size_t from_bytes = 0;
        if (nargs == 3) {
            from_bytes = PyLong_AsSize_t(args[2]);
            if (from_bytes == static_cast<std::size_t>(-1) && PyErr_Occurred())
                throw python_error{};
        }
        const int enabled = PyObject_IsTrue(args[0]);
        if (enabled < 0) throw python_error{};
        const long error = PyLong_AsLong(args[1]);
        if (error == -1 && PyErr_Occurred()) throw python_error{};
        if (error < 0 || error > 4095) raise(PyExc_ValueError, "fail_with must be 0 or an errno");
        preparation_enabled.store(enabled != 0, std::memory_order_relaxed);
        injected_error.store(static_cast<int>(error), std::memory_order_relaxed);
        prepare_from_setting.store(from_bytes != 0 ? from_bytes : default_prepare_from_bytes,
                                   std::memory_order_relaxed);
        Py_RETURN_NONE;
    });
}

// _page_preparation_counts(): how many ranges were prepared, and how many madvise calls advised
// huge pages, populated, or were refused, since the module was loaded.
PyObject* page_preparation_counts_entry(PyObject*, PyObject* const*, Py_ssize_t nargs) {
    return guarded([&] {
        if (nargs != 0) raise(PyExc_TypeError, "_page_preparation_counts takes no arguments");
        const auto value = [](const std::atomic<std::uint64_t>& counter) {
            return static_cast<unsigned long long>(counter.load(std::memory_order_relaxed));
        };
        return checked(Py_BuildValue("{sKsKsKsKsK}", "prepared", value(prepared_count), "resident",
                                     value(resident_count), "huge_advised",
                                     value(huge_advised_count), "populated", value(populated_count),
                                     "refused", value(refused_count)));
    });
}

}  // namespace

PyMethodDef output_memory_methods[] = {
    {"_set_page_preparation", as_method(set_page_preparation_entry), METH_FASTCALL,
     "_set_page_preparation(enabled, fail_with, from_bytes=0, /)\n--\n\n"
     "Test hook: enabled False writes large outputs unprepared; fail_with an errno (0: none) that "
     "every madvise call of the preparation fails with instead of being made; from_bytes the size "
     "from which outputs are prepared (0: the default)."},
    {"_page_preparation_counts", as_method(page_preparation_counts_entry), METH_FASTCALL,
     "_page_preparation_counts()\n--\n\n"
     "{prepared, huge_advised, populated, refused}: ranges prepared and madvise calls made or "
     "refused since the module loaded."},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace binding
