// Internal: the CPU features the levels need, and the pure decision of which ones a CPU and its
// OS let us use (dispatch.cpp executes cpuid/xgetbv and passes the registers in).
#pragma once

#include <cstdint>

namespace tensorb64 {

// A set of CPU features, one bit each. A level may run when the CPU has every feature its
// implementation requires (implementation.hpp).
using cpu_features = std::uint32_t;

namespace feature {
// x86-64, as GCC's -m flags name them (-mavx2 ...).
constexpr cpu_features avx = 1u << 0;
constexpr cpu_features avx2 = 1u << 1;
constexpr cpu_features f16c = 1u << 2;
constexpr cpu_features fma = 1u << 3;
constexpr cpu_features bmi2 = 1u << 4;
constexpr cpu_features avx512f = 1u << 5;
constexpr cpu_features avx512bw = 1u << 6;
constexpr cpu_features avx512vl = 1u << 7;
constexpr cpu_features avx512dq = 1u << 8;
constexpr cpu_features avx512vbmi = 1u << 9;
constexpr cpu_features avx512vbmi2 = 1u << 11;
constexpr cpu_features popcnt = 1u << 12;
// AArch64 (baseline there; little-endian only, as the NEON encoder assumes).
constexpr cpu_features neon = 1u << 10;
}  // namespace feature

// The CPUID registers the x86 decision reads (zero for a leaf the CPU does not have).
struct cpuid_bits {
    std::uint32_t leaf1_ecx = 0;  // CPUID.(EAX=1):ECX
    std::uint32_t leaf7_ebx = 0;  // CPUID.(EAX=7, ECX=0):EBX
    std::uint32_t leaf7_ecx = 0;  // CPUID.(EAX=7, ECX=0):ECX
};

// The features an x86-64 CPU has *and* its OS lets a program use: the vector features count only
// when CPUID.1:ECX.OSXSAVE is set and XCR0 shows the OS saves their registers on a context switch
// (XMM and YMM state for the AVX family, opmask and both ZMM parts for AVX-512). xcr0 is read only
// when OSXSAVE is set (xgetbv faults otherwise), so any value is accepted without it.
cpu_features decide_x86_features(const cpuid_bits& cpuid, std::uint64_t xcr0) noexcept;

// The XCR0 to decide with on macOS, from the one xgetbv read and sysctl hw.optional.avx512f. Its
// kernel saves a thread's AVX-512 state (opmask, both ZMM parts) but enables it lazily, at the
// thread's first AVX-512 instruction (a trap the kernel answers), so XCR0 lacks those bits in a
// thread that has run none, as dispatch's has; the kernel says it will enable them in
// hw.optional.avx512f (1: the CPU has AVX-512F and the kernel supports its state). The YMM state
// it enables at boot: XCR0 shows that as on every OS. Linux and Windows enable every state they
// save at boot: there, XCR0 as read is the answer. (Pure, so that the tests run it on every OS.)
std::uint64_t macos_xcr0(std::uint64_t xcr0, bool sysctl_avx512f) noexcept;

}  // namespace tensorb64
