#include "sizes.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#if defined(_WIN32)
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>
#elif defined(__APPLE__)
#include <sys/sysctl.h>
#elif defined(__unix__)
#include <unistd.h>
#endif

namespace binding {

using namespace std::string_literals;

namespace {

// The machine's physical memory in bytes (0 if unknown): an output larger than this cannot be
// made, and trying would end in the OOM killer (or a system paging to a halt) rather than a
// MemoryError. Each OS's own answer, chosen at build time.
std::size_t physical_memory() {
    // Asked once: it is a system call, dearer than encoding a short row.
    static const std::size_t bytes = [] {
#if defined(_WIN32)
        MEMORYSTATUSEX status;
        status.dwLength = sizeof status;
        if (GlobalMemoryStatusEx(&status))
            return static_cast<std::size_t>(std::min<std::uint64_t>(status.ullTotalPhys, SIZE_MAX));
#elif defined(__APPLE__)
        std::uint64_t memsize = 0;
        std::size_t size = sizeof memsize;
        if (sysctlbyname("hw.memsize", &memsize, &size, nullptr, 0) == 0)
            return static_cast<std::size_t>(std::min<std::uint64_t>(memsize, SIZE_MAX));
#elif defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
        const long pages = sysconf(_SC_PHYS_PAGES);
        const long page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0 &&
            static_cast<std::size_t>(pages) <= SIZE_MAX / static_cast<std::size_t>(page)) {
            return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page);
        }
#endif
        return std::size_t{0};
    }();
    return bytes;
}

}  // namespace

std::size_t checked_total(std::size_t rows, std::size_t per_row, const char* what,
                          const char* unit) {
    const std::size_t limit = static_cast<std::size_t>(PY_SSIZE_T_MAX);
    const bool overflow = per_row > limit || (rows != 0 && per_row > limit / rows);
    const std::size_t total = overflow ? 0 : rows * per_row;
    const std::size_t memory = physical_memory();
    if (overflow || (memory != 0 && total > memory)) {
        const double bytes = static_cast<double>(rows) * static_cast<double>(per_row);
        char size[64];
        std::snprintf(size, sizeof size, "%.3g GiB", bytes / (1024.0 * 1024.0 * 1024.0));
        raise(PyExc_MemoryError,
              "the "s + what + " would take " + size + " (" + std::to_string(rows) + " " + unit +
                  "), more than this machine's memory" +
                  (memory != 0 ? " (" + std::to_string(memory >> 20) + " MiB)" : ""));
    }
    return total;
}

std::size_t row_text_length(const tb::strided_rows& source, tb::element_format target) {
    const std::size_t size = tb::dtype_size(target.type);
    std::size_t length = 0;
    if (source.row_length > SIZE_MAX / size ||
        !tb::encoded_size(source.row_length * size, &length)) {
        raise(PyExc_MemoryError,
              "a row of " + std::to_string(source.row_length) + " values is too long to encode");
    }
    return length;
}

void check_convertible(const tb::strided_rows& source, tb::element_format target) {
    if (!tb::is_output_type(target.type)) {
        raise(PyExc_ValueError, "cannot encode "s + tb::to_string(source.format.type) +
                                    " elements as " + tb::to_string(target.type));
    }
}

}  // namespace binding
