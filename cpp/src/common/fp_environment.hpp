// Pins the floating-point environment to IEEE defaults while a SIMD level's function runs.
//
// Some vector conversions (vcvtpd2ps; NEON fcvtn) round as MXCSR / FPCR say and flush subnormal
// results when flush-to-zero is set, and a server process may run with either changed (a library
// built with -ffast-math sets FTZ/DAZ at load time). Results must not depend on that, so each SIMD
// level's entry point runs with round-to-nearest-even and no flushing, and gives the caller its
// own settings back, exception flags included. The scalar level needs none of this: its
// conversions are integer arithmetic.
#pragma once

#include <cstdint>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif
#if (defined(_MSC_VER) && !defined(__clang__)) && defined(_M_ARM64)
#include <intrin.h>
#endif

namespace tensorb64 {
namespace {

#if defined(__x86_64__) || defined(_M_X64)
class ieee_fp_environment {
public:
    // All exceptions masked, round to nearest even, FTZ and DAZ off: MXCSR's power-on value.
    ieee_fp_environment() noexcept : caller_(_mm_getcsr()) { _mm_setcsr(0x1f80); }
    ~ieee_fp_environment() { _mm_setcsr(caller_); }
    ieee_fp_environment(const ieee_fp_environment&) = delete;
    ieee_fp_environment& operator=(const ieee_fp_environment&) = delete;

private:
    unsigned caller_;
};
#elif defined(__aarch64__) || defined(_M_ARM64)
class ieee_fp_environment {
public:
    // RMode (bits 23:22) = round to nearest even; FZ (bit 24) and FZ16 (bit 19) off.
    ieee_fp_environment() noexcept : caller_(read()) {
        write(caller_ &
              ~((std::uint64_t{3} << 22) | (std::uint64_t{1} << 24) | (std::uint64_t{1} << 19)));
    }
    ~ieee_fp_environment() { write(caller_); }
    ieee_fp_environment(const ieee_fp_environment&) = delete;
    ieee_fp_environment& operator=(const ieee_fp_environment&) = delete;

private:
    static std::uint64_t read() noexcept {
#if defined(_MSC_VER) && !defined(__clang__)
        return static_cast<std::uint64_t>(_ReadStatusReg(ARM64_FPCR));
#else
        std::uint64_t fpcr;
        __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
        return fpcr;
#endif
    }
    static void write(std::uint64_t fpcr) noexcept {
#if defined(_MSC_VER) && !defined(__clang__)
        _WriteStatusReg(ARM64_FPCR, static_cast<__int64>(fpcr));
#else
        __asm__ __volatile__("msr fpcr, %0" : : "r"(fpcr));
#endif
    }
    std::uint64_t caller_;
};
#endif

}  // namespace
}  // namespace tensorb64
