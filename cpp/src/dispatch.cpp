// Run-time choice of the kernel: the best one this CPU and OS can run, unless the environment
// variable TENSORB64_SIMD names a lower one. Chosen once, kept in an atomic pointer.
#include <array>
#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "dispatch.hpp"

#if defined(__x86_64__) || defined(_M_X64)
#define TENSORB64_X86 1
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#else
#include <cpuid.h>
#endif
#endif

namespace tensorb64 {
namespace {

struct kernel_entry {
    simd_level level;
    encode_rows_fn encode_rows;
};

// Lowest level first. The scalar kernel is always there.
constexpr kernel_entry kernels[] = {
    {simd_level::scalar, encode_rows_scalar},
#if defined(TENSORB64_HAVE_X86_KERNELS)
    {simd_level::avx2, encode_rows_avx2},
    {simd_level::avx512, encode_rows_avx512},
#endif
#if defined(TENSORB64_HAVE_NEON_KERNEL)
    {simd_level::neon, encode_rows_neon},
#endif
};

#if defined(TENSORB64_X86)
struct cpuid_registers {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

cpuid_registers cpuid(unsigned leaf, unsigned subleaf) {
    cpuid_registers r;
#if defined(_MSC_VER) && !defined(__clang__)
    int regs[4];
    __cpuidex(regs, static_cast<int>(leaf), static_cast<int>(subleaf));
    r = {static_cast<unsigned>(regs[0]), static_cast<unsigned>(regs[1]),
         static_cast<unsigned>(regs[2]), static_cast<unsigned>(regs[3])};
#else
    if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx)) return {};
#endif
    return r;
}

// The register state the OS saves on a context switch (XCR0); only valid when OSXSAVE is set.
unsigned long long os_saved_state() {
#if defined(_MSC_VER) && !defined(__clang__)
    return _xgetbv(0);
#else
    unsigned eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));  // no -mxsave needed for asm
    return (static_cast<unsigned long long>(edx) << 32) | eax;
#endif
}

bool bit(unsigned reg, unsigned n) { return (reg >> n) & 1u; }

bool cpu_supports(simd_level level) {
    if (level == simd_level::scalar) return true;
    if (level == simd_level::neon) return false;
    const cpuid_registers leaf1 = cpuid(1, 0);
    const bool osxsave = bit(leaf1.ecx, 27);
    if (!osxsave) return false;
    const unsigned long long xcr0 = os_saved_state();
    const cpuid_registers leaf7 = cpuid(7, 0);
    const bool avx2 = bit(leaf1.ecx, 28) /* AVX */ && bit(leaf1.ecx, 29) /* F16C */ &&
                      bit(leaf1.ecx, 12) /* FMA */ && bit(leaf7.ebx, 5) /* AVX2 */ &&
                      bit(leaf7.ebx, 8) /* BMI2 */ && (xcr0 & 0x6) == 0x6 /* XMM, YMM */;
    if (level == simd_level::avx2) return avx2;
    // avx512: F, DQ, BW, VL and VBMI, with the opmask and both halves of the ZMM state saved.
    return avx2 && bit(leaf7.ebx, 16) && bit(leaf7.ebx, 17) && bit(leaf7.ebx, 30) &&
           bit(leaf7.ebx, 31) && bit(leaf7.ecx, 1) && (xcr0 & 0xe6) == 0xe6;
}
#else
bool cpu_supports(simd_level level) {
#if defined(TENSORB64_HAVE_NEON_KERNEL)
    if (level == simd_level::neon) return true;  // NEON is baseline on aarch64
#endif
    return level == simd_level::scalar;
}
#endif

// cpuid traps to the hypervisor on some virtual machines (microseconds a call): ask once.
bool cpu_can_run(simd_level level) {
    static const std::array<bool, 4> runnable = [] {
        std::array<bool, 4> supported{};
        for (simd_level l : {simd_level::scalar, simd_level::avx2, simd_level::avx512, simd_level::neon}) {
            supported[static_cast<std::size_t>(l)] = cpu_supports(l);
        }
        return supported;
    }();
    return runnable[static_cast<std::size_t>(level)];
}

const kernel_entry* find_runnable(simd_level level) {
    for (const kernel_entry& k : kernels) {
        if (k.level == level && cpu_can_run(level)) return &k;
    }
    return nullptr;
}

std::string available_names() {
    std::string names;
    for (simd_level level : available_simd_levels()) {
        if (!names.empty()) names += ", ";
        names += to_string(level);
    }
    return names;
}

const kernel_entry* choose_kernel() {
    const char* forced = std::getenv("TENSORB64_SIMD");
    if (forced == nullptr || *forced == '\0') return find_runnable(available_simd_levels().back());
    simd_level level;
    const kernel_entry* entry = parse_simd_level(forced, &level) ? find_runnable(level) : nullptr;
    if (entry == nullptr) {
        throw std::runtime_error(std::string("TENSORB64_SIMD=") + forced +
                                 " is not a SIMD level this CPU can run; available: " +
                                 available_names());
    }
    return entry;
}

std::atomic<const kernel_entry*> active{nullptr};

const kernel_entry& active_entry() {
    const kernel_entry* entry = active.load(std::memory_order_acquire);
    if (entry == nullptr) {
        // Two threads may both choose; they choose the same, so the race is harmless.
        entry = choose_kernel();
        active.store(entry, std::memory_order_release);
    }
    return *entry;
}

}  // namespace

const char* to_string(simd_level level) noexcept {
    switch (level) {
        case simd_level::scalar: return "scalar";
        case simd_level::avx2: return "avx2";
        case simd_level::avx512: return "avx512";
        case simd_level::neon: return "neon";
    }
    return "unknown";
}

bool parse_simd_level(std::string_view name, simd_level* level) noexcept {
    for (simd_level candidate :
         {simd_level::scalar, simd_level::avx2, simd_level::avx512, simd_level::neon}) {
        if (name == to_string(candidate)) {
            *level = candidate;
            return true;
        }
    }
    return false;
}

std::vector<simd_level> available_simd_levels() {
    std::vector<simd_level> levels;
    for (const kernel_entry& k : kernels) {
        if (cpu_can_run(k.level)) levels.push_back(k.level);
    }
    return levels;
}

simd_level active_simd_level() { return active_entry().level; }

void force_simd_level(simd_level level) {
    const kernel_entry* entry = find_runnable(level);
    if (entry == nullptr) {
        throw std::invalid_argument(std::string("SIMD level '") + to_string(level) +
                                    "' is not available on this CPU; available: " +
                                    available_names());
    }
    active.store(entry, std::memory_order_release);
}

encode_rows_fn active_kernel() { return active_entry().encode_rows; }

}  // namespace tensorb64
