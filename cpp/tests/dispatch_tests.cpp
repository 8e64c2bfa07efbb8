// Tests of dispatch's pure parts, with made-up CPUs: which SIMD levels a CPU's CPUID and XCR0 bits
// allow (and, on macOS, its sysctl), and how TENSORB64_SIMD is read. No real CPU exercises most of
// these cases (and qemu cannot emulate AVX-512), so a dispatcher that stopped checking VBMI or the
// OS's saved state would pass every other test on the machines we have. Includes the core's
// internal headers.
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "dispatch/dispatch.hpp"
#include "watchdog.hpp"

namespace tb = tensorb64;
using level = tb::simd_level;

namespace {

long passed = 0;
long failed = 0;

void check(bool ok, const std::string& what) {
    test_watchdog::beat();
    if (ok) {
        ++passed;
    } else {
        ++failed;
        std::fprintf(stderr, "dispatch_tests: FAILED: %s\n", what.c_str());
    }
}

std::string names(const std::vector<level>& levels) {
    std::string out;
    for (level l : levels) out += std::string(out.empty() ? "" : " ") + tb::to_string(l);
    return "{" + out + "}";
}

// CPUID bit positions (Intel SDM vol. 2A, CPUID) and XCR0 state components.
constexpr std::uint32_t bit(unsigned n) { return std::uint32_t{1} << n; }
constexpr std::uint32_t leaf1_fma = bit(12), leaf1_popcnt = bit(23), leaf1_osxsave = bit(27),
                        leaf1_avx = bit(28), leaf1_f16c = bit(29);
constexpr std::uint32_t leaf7_avx2 = bit(5), leaf7_bmi2 = bit(8), leaf7_avx512f = bit(16),
                        leaf7_avx512dq = bit(17), leaf7_avx512bw = bit(30),
                        leaf7_avx512vl = bit(31);
constexpr std::uint32_t leaf7_ecx_avx512vbmi = bit(1), leaf7_ecx_avx512vbmi2 = bit(6);
constexpr std::uint64_t xcr0_x87 = 1, xcr0_sse = 2, xcr0_avx = 4, xcr0_opmask = 0x20,
                        xcr0_zmm_hi256 = 0x40, xcr0_hi16_zmm = 0x80;
constexpr std::uint64_t xcr0_all =
    xcr0_x87 | xcr0_sse | xcr0_avx | xcr0_opmask | xcr0_zmm_hi256 | xcr0_hi16_zmm;

// An Ice Lake-like CPU under an OS that saves every register: everything the levels use.
tb::cpuid_bits everything() {
    tb::cpuid_bits b;
    b.leaf1_ecx = leaf1_fma | leaf1_popcnt | leaf1_osxsave | leaf1_avx | leaf1_f16c;
    b.leaf7_ebx =
        leaf7_avx2 | leaf7_bmi2 | leaf7_avx512f | leaf7_avx512dq | leaf7_avx512bw | leaf7_avx512vl;
    b.leaf7_ecx = leaf7_ecx_avx512vbmi | leaf7_ecx_avx512vbmi2;
    return b;
}

struct cpu_case {
    const char* what;
    tb::cpuid_bits cpuid;
    std::uint64_t xcr0;
    std::vector<level> expected;
};

tb::cpuid_bits without(tb::cpuid_bits b, std::uint32_t leaf1_ecx, std::uint32_t leaf7_ebx,
                       std::uint32_t leaf7_ecx) {
    b.leaf1_ecx &= ~leaf1_ecx;
    b.leaf7_ebx &= ~leaf7_ebx;
    b.leaf7_ecx &= ~leaf7_ecx;
    return b;
}

void test_made_up_cpus() {
    const std::vector<level> all_x86 = {level::scalar, level::avx2, level::avx512};
    const std::vector<level> up_to_avx2 = {level::scalar, level::avx2};
    const std::vector<level> scalar = {level::scalar};
    const tb::cpuid_bits full = everything();
    const cpu_case cases[] = {
        {"everything present", full, xcr0_all, all_x86},
        {"AVX-512 without VBMI (Skylake-X)", without(full, 0, 0, leaf7_ecx_avx512vbmi), xcr0_all,
         up_to_avx2},
        {"AVX-512 without VBMI2 (Cannon Lake)", without(full, 0, 0, leaf7_ecx_avx512vbmi2),
         xcr0_all, up_to_avx2},
        {"AVX-512 without POPCNT", without(full, leaf1_popcnt, 0, 0), xcr0_all, up_to_avx2},
        {"AVX-512 without F", without(full, 0, leaf7_avx512f, 0), xcr0_all, up_to_avx2},
        {"AVX-512 without BW", without(full, 0, leaf7_avx512bw, 0), xcr0_all, up_to_avx2},
        {"AVX-512 without VL", without(full, 0, leaf7_avx512vl, 0), xcr0_all, up_to_avx2},
        {"AVX-512 without DQ", without(full, 0, leaf7_avx512dq, 0), xcr0_all, up_to_avx2},
        {"OS saves no opmask/ZMM state (XCR0 bits 5-7 clear)", full, xcr0_x87 | xcr0_sse | xcr0_avx,
         up_to_avx2},
        {"OS saves no opmask state", full, xcr0_all & ~xcr0_opmask, up_to_avx2},
        {"OS saves no upper ZMM0-15 halves", full, xcr0_all & ~xcr0_zmm_hi256, up_to_avx2},
        {"OS saves no ZMM16-31", full, xcr0_all & ~xcr0_hi16_zmm, up_to_avx2},
        {"OS saves no YMM state", full, xcr0_all & ~xcr0_avx, scalar},
        {"OS saves no XMM state", full, xcr0_all & ~xcr0_sse, scalar},
        {"OSXSAVE clear (XCR0 must not be trusted)", without(full, leaf1_osxsave, 0, 0), xcr0_all,
         scalar},
        {"AVX2 without FMA", without(full, leaf1_fma, 0, 0), xcr0_all, scalar},
        {"AVX2 without BMI2", without(full, 0, leaf7_bmi2, 0), xcr0_all, scalar},
        {"AVX2 without F16C", without(full, leaf1_f16c, 0, 0), xcr0_all, scalar},
        {"AVX2 without AVX", without(full, leaf1_avx, 0, 0), xcr0_all, scalar},
        {"no AVX2", without(full, 0, leaf7_avx2, 0), xcr0_all, scalar},
        {"nothing at all", tb::cpuid_bits{}, 0, scalar},
        {"Haswell: AVX2, FMA, F16C, BMI2, no AVX-512",
         without(full, 0, leaf7_avx512f | leaf7_avx512dq | leaf7_avx512bw | leaf7_avx512vl,
                 leaf7_ecx_avx512vbmi | leaf7_ecx_avx512vbmi2),
         xcr0_x87 | xcr0_sse | xcr0_avx, up_to_avx2},
    };
    for (const cpu_case& c : cases) {
        const tb::cpu_features features = tb::decide_x86_features(c.cpuid, c.xcr0);
        const std::vector<level> got = tb::levels_supported_by(features);
        check(got == c.expected,
              std::string(c.what) + ": got " + names(got) + ", expected " + names(c.expected));
        check((features & tb::feature::neon) == 0, std::string(c.what) + ": x86 reported NEON");
    }
    check(tb::levels_supported_by(tb::feature::neon) ==
              std::vector<level>{level::scalar, level::neon},
          "AArch64's NEON: scalar and neon");
    check(tb::levels_supported_by(0) == std::vector<level>{level::scalar}, "no features: scalar");
}

// Each OS's answer to "which vector state is saved", on made-up CPUs. Linux and Windows: XCR0 as
// read (the cases above). macOS: XCR0 shows no AVX-512 state in a thread that has not yet run an
// AVX-512 instruction (the kernel enables it at the first one), so the decision takes
// sysctl hw.optional.avx512f instead; without this an x86-64 Mac never got avx512.
void test_macos() {
    const std::vector<level> all_x86 = {level::scalar, level::avx2, level::avx512};
    const std::vector<level> up_to_avx2 = {level::scalar, level::avx2};
    const std::vector<level> scalar = {level::scalar};
    const tb::cpuid_bits full = everything();
    const std::uint64_t before_first_use = xcr0_x87 | xcr0_sse | xcr0_avx;  // what macOS shows
    struct macos_case {
        const char* what;
        tb::cpuid_bits cpuid;
        std::uint64_t xcr0;
        bool sysctl_avx512f;
        std::vector<level> expected;
    };
    const macos_case cases[] = {
        {"Ice Lake Mac, AVX-512 state not yet enabled, sysctl 1", full, before_first_use, true,
         all_x86},
        {"Ice Lake Mac, AVX-512 state already enabled, sysctl 1", full, xcr0_all, true, all_x86},
        {"sysctl 0 (or absent): XCR0 alone decides", full, before_first_use, false, up_to_avx2},
        {"Xeon W Mac (Cascade Lake: no VBMI), sysctl 1",
         without(full, 0, 0, leaf7_ecx_avx512vbmi | leaf7_ecx_avx512vbmi2), before_first_use, true,
         up_to_avx2},
        {"sysctl 1 gives no YMM state", full, xcr0_x87 | xcr0_sse, true, scalar},
        {"sysctl 1 with OSXSAVE clear", without(full, leaf1_osxsave, 0, 0), before_first_use, true,
         scalar},
        {"Haswell Mac, sysctl 0",
         without(full, 0, leaf7_avx512f | leaf7_avx512dq | leaf7_avx512bw | leaf7_avx512vl,
                 leaf7_ecx_avx512vbmi | leaf7_ecx_avx512vbmi2),
         before_first_use, false, up_to_avx2},
    };
    for (const macos_case& c : cases) {
        const std::vector<level> got = tb::levels_supported_by(
            tb::decide_x86_features(c.cpuid, tb::macos_xcr0(c.xcr0, c.sysctl_avx512f)));
        check(got == c.expected, std::string("macOS: ") + c.what + ": got " + names(got) +
                                     ", expected " + names(c.expected));
    }
    check(tb::macos_xcr0(before_first_use, false) == before_first_use,
          "macOS, sysctl 0: XCR0 unchanged");
}

// The level TENSORB64_SIMD asks for, and its two errors: a name that is no level at all, and a
// level this CPU cannot run.
void test_environment() {
    const std::vector<level> only_scalar = {level::scalar};
    const std::vector<level> x86 = {level::scalar, level::avx2, level::avx512};
    check(tb::level_for_environment("", x86) == level::avx512, "unset: the best level");
    check(tb::level_for_environment("avx2", x86) == level::avx2, "avx2 on an AVX-512 CPU");
    check(tb::level_for_environment("scalar", only_scalar) == level::scalar, "scalar");

    const auto message = [](const char* value, const std::vector<level>& available) {
        try {
            tb::level_for_environment(value, available);
        } catch (const std::runtime_error& e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    const std::string unknown_tail =
        " is not a known SIMD level (known: scalar, avx2, avx512, neon; available on this CPU: "
        "scalar)";
    for (const char* value : {"AVX2", "sse9", " avx2", "avx2 ", "Scalar"}) {
        const std::string got = message(value, only_scalar);
        check(got == "TENSORB64_SIMD=" + std::string(value) + unknown_tail,
              std::string("unknown level '") + value + "': " + got);
    }
    for (const char* value : {"avx2", "avx512", "neon"}) {
        const std::string got = message(value, only_scalar);
        check(got == "TENSORB64_SIMD=" + std::string(value) +
                         " is not a SIMD level this CPU can run; available: scalar",
              std::string("unavailable level '") + value + "': " + got);
    }
    check(message("neon", x86) ==
              "TENSORB64_SIMD=neon is not a SIMD level this CPU can run; available: scalar, avx2, "
              "avx512",
          "neon on x86: " + message("neon", x86));
}

// Names, order and availability all come from the list of implementations.
void test_implementations() {
    std::vector<level> all;
    for (const tb::implementation* candidate : tb::implementations) {
        const tb::implementation& impl = *candidate;
        all.push_back(impl.level);
        level parsed = level::scalar;
        check(tb::parse_simd_level(impl.name, &parsed) && parsed == impl.level,
              std::string("parse_simd_level(to_string(") + impl.name + "))");
        check(std::string(tb::to_string(impl.level)) == impl.name,
              std::string("to_string ") + impl.name);
        check(&tb::implementation_for(impl.level) == &impl,
              std::string("implementation_for ") + impl.name);
        // All five functions or none: dispatch never runs a level with a missing function.
        const int functions = (impl.encode_rows != nullptr) + (impl.float_text != nullptr) +
                              (impl.parse_number_row != nullptr) +
                              (impl.parse_number_row_double != nullptr) +
                              (impl.decode_base64_groups != nullptr);
        check(functions == 0 || functions == 5,
              std::string("all five functions or none: ") + impl.name);
    }
    check(tb::implementations[0] == &tb::scalar_implementation &&
              tb::scalar_implementation.level == level::scalar &&
              tb::scalar_implementation.required == 0,
          "the scalar level comes first and needs nothing");
    check(tb::scalar_implementation.built(), "the scalar level is always built");
    // What this machine can run: in list order, each built, beginning with scalar.
    const std::vector<level> available = tb::available_simd_levels();
    std::size_t next = 0;
    for (level l : available) {
        while (next < all.size() && all[next] != l) ++next;
        check(next < all.size(), std::string("available level in list order: ") + tb::to_string(l));
        check(tb::implementation_for(l).built(),
              std::string("available and built: ") + tb::to_string(l));
    }
    check(!available.empty() && available.front() == level::scalar, "scalar is always available");
}

}  // namespace

int main() {
    test_made_up_cpus();
    test_macos();
    test_environment();
    test_implementations();
    std::printf("dispatch_tests: %ld passed, %ld failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
