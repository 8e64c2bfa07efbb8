// Run-time choice of the implementation: the best level this CPU and OS can run, unless the
// environment variable TENSORB64_SIMD names a lower one. Chosen once, kept in an atomic pointer.
// Everything about the levels (their names, order, required features, functions) comes from the
// list of implementations (implementation.hpp); the only architecture-specific code here is what
// reads the CPU's registers.
#include "dispatch/dispatch.hpp"

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>

#if defined(__x86_64__) || defined(_M_X64)
#define TENSORB64_X86 1
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#else
#include <cpuid.h>
#endif
#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif
#endif

namespace tensorb64 {

namespace {
constexpr std::uint64_t xmm_ymm_state = 0x6;  // XCR0 bits 1 (SSE) and 2 (AVX)
constexpr std::uint64_t zmm_state = 0xe0;     // bits 5 (opmask), 6 (ZMM_Hi256), 7 (Hi16_ZMM)
}  // namespace

std::uint64_t macos_xcr0(std::uint64_t xcr0, bool sysctl_avx512f) noexcept {
    return sysctl_avx512f ? xcr0 | zmm_state : xcr0;
}

cpu_features decide_x86_features(const cpuid_bits& cpuid, std::uint64_t xcr0) noexcept {
    const auto bit = [](std::uint32_t reg, unsigned n) { return ((reg >> n) & 1u) != 0; };
    // BMI2 and POPCNT work on general-purpose registers: no OS support needed.
    cpu_features usable = bit(cpuid.leaf7_ebx, 8) ? feature::bmi2 : 0;
    if (bit(cpuid.leaf1_ecx, 23)) usable |= feature::popcnt;
    if (!bit(cpuid.leaf1_ecx, 27)) return usable;  // no OSXSAVE: XCR0 unreadable, no AVX state

    if ((xcr0 & xmm_ymm_state) != xmm_ymm_state) return usable;
    if (bit(cpuid.leaf1_ecx, 28)) usable |= feature::avx;
    if (bit(cpuid.leaf1_ecx, 29)) usable |= feature::f16c;
    if (bit(cpuid.leaf1_ecx, 12)) usable |= feature::fma;
    if (bit(cpuid.leaf7_ebx, 5)) usable |= feature::avx2;

    if ((xcr0 & zmm_state) != zmm_state) return usable;
    if (bit(cpuid.leaf7_ebx, 16)) usable |= feature::avx512f;
    if (bit(cpuid.leaf7_ebx, 17)) usable |= feature::avx512dq;
    if (bit(cpuid.leaf7_ebx, 30)) usable |= feature::avx512bw;
    if (bit(cpuid.leaf7_ebx, 31)) usable |= feature::avx512vl;
    if (bit(cpuid.leaf7_ecx, 1)) usable |= feature::avx512vbmi;
    if (bit(cpuid.leaf7_ecx, 6)) usable |= feature::avx512vbmi2;
    return usable;
}

std::vector<simd_level> levels_supported_by(cpu_features features) {
    std::vector<simd_level> levels;
    for (const implementation* candidate : implementations) {
        if ((candidate->required & ~features) == 0) levels.push_back(candidate->level);
    }
    return levels;
}

namespace {

std::string joined_names(const std::vector<simd_level>& levels) {
    std::string names;
    for (simd_level level : levels) {
        if (!names.empty()) names += ", ";
        names += to_string(level);
    }
    return names;
}

#if defined(TENSORB64_X86)
// The vector state this OS saves for a program, as XCR0 bits, from what xgetbv read: the one OS
// fact dispatch needs, each OS's answer chosen at build time (see macos_xcr0).
std::uint64_t os_saved_state(std::uint64_t xcr0) noexcept {
#if defined(__APPLE__)
    int enabled = 0;
    std::size_t size = sizeof enabled;
    const bool known = sysctlbyname("hw.optional.avx512f", &enabled, &size, nullptr, 0) == 0;
    return macos_xcr0(xcr0, known && enabled == 1);
#else
    return xcr0;  // Linux, Windows (and the BSDs) enable what they save at boot
#endif
}
#endif

// The one place that executes cpuid and xgetbv; decide_x86_features does the deciding.
cpu_features read_host_features() {
#if defined(TENSORB64_X86)
    const auto cpuid = [](unsigned leaf, unsigned subleaf, unsigned regs[4]) {
#if defined(_MSC_VER) && !defined(__clang__)
        int r[4];
        __cpuidex(r, static_cast<int>(leaf), static_cast<int>(subleaf));
        for (int i = 0; i < 4; ++i) regs[i] = static_cast<unsigned>(r[i]);
#else
        if (!__get_cpuid_count(leaf, subleaf, &regs[0], &regs[1], &regs[2], &regs[3])) {
            regs[0] = regs[1] = regs[2] = regs[3] = 0;  // a leaf above the CPU's maximum
        }
#endif
    };
    unsigned leaf1[4], leaf7[4];
    cpuid(1, 0, leaf1);
    cpuid(7, 0, leaf7);
    cpuid_bits bits;
    bits.leaf1_ecx = leaf1[2];
    bits.leaf7_ebx = leaf7[1];
    bits.leaf7_ecx = leaf7[2];
    std::uint64_t xcr0 = 0;
    if ((bits.leaf1_ecx >> 27) & 1u) {  // OSXSAVE: xgetbv is allowed
#if defined(_MSC_VER) && !defined(__clang__)
        xcr0 = _xgetbv(0);
#else
        unsigned eax, edx;
        __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));  // no -mxsave needed for asm
        xcr0 = (static_cast<std::uint64_t>(edx) << 32) | eax;
#endif
    }
    return decide_x86_features(bits, os_saved_state(xcr0));
#elif (defined(__aarch64__) || defined(_M_ARM64)) && !defined(__AARCH64EB__)
    return feature::neon;  // baseline on (little-endian) AArch64
#else
    return 0;
#endif
}

// cpuid traps to the hypervisor on some virtual machines (microseconds a call): ask once.
cpu_features host_features() {
    static const cpu_features features = read_host_features();
    return features;
}

// Whether this build compiled the level and this CPU can run it.
bool runnable(const implementation& candidate) {
    return candidate.built() && (candidate.required & ~host_features()) == 0;
}

const implementation* find_runnable(simd_level level) {
    const implementation& candidate = implementation_for(level);
    return runnable(candidate) ? &candidate : nullptr;
}

const implementation* choose_implementation() {
    const char* forced = std::getenv("TENSORB64_SIMD");
    return find_runnable(level_for_environment(forced ? forced : "", available_simd_levels()));
}

std::atomic<const implementation*> active{nullptr};

}  // namespace

simd_level level_for_environment(std::string_view value, const std::vector<simd_level>& available) {
    if (value.empty()) return available.back();
    const std::string setting = "TENSORB64_SIMD=" + std::string(value);
    simd_level level;
    if (!parse_simd_level(value, &level)) {
        std::vector<simd_level> known;
        for (const implementation* candidate : implementations) known.push_back(candidate->level);
        throw std::runtime_error(setting +
                                 " is not a known SIMD level (known: " + joined_names(known) +
                                 "; available on this CPU: " + joined_names(available) + ")");
    }
    for (simd_level a : available) {
        if (a == level) return level;
    }
    throw std::runtime_error(
        setting + " is not a SIMD level this CPU can run; available: " + joined_names(available));
}

const char* to_string(simd_level level) noexcept {
    for (const implementation* candidate : implementations) {
        if (candidate->level == level) return candidate->name;
    }
    return "unknown";
}

bool parse_simd_level(std::string_view name, simd_level* level) noexcept {
    for (const implementation* candidate : implementations) {
        if (name == candidate->name) {
            *level = candidate->level;
            return true;
        }
    }
    return false;
}

std::vector<simd_level> available_simd_levels() {
    std::vector<simd_level> levels;
    for (const implementation* candidate : implementations) {
        if (runnable(*candidate)) levels.push_back(candidate->level);
    }
    return levels;
}

const implementation& active_implementation() {
    const implementation* chosen = active.load(std::memory_order_acquire);
    if (chosen == nullptr) {
        // Two threads may both choose; they choose the same, so the race is harmless.
        chosen = choose_implementation();
        active.store(chosen, std::memory_order_release);
    }
    return *chosen;
}

simd_level active_simd_level() { return active_implementation().level; }

void force_simd_level(simd_level level) {
    const implementation* chosen = find_runnable(level);
    if (chosen == nullptr) {
        throw std::invalid_argument(
            std::string("SIMD level '") + to_string(level) +
            "' is not available on this CPU; available: " + joined_names(available_simd_levels()));
    }
    active.store(chosen, std::memory_order_release);
}

}  // namespace tensorb64
