// The checks of the C++ test programs: plain C++17, no framework. A failed CHECK prints where and
// what (the first 30 failures), counts, and the program ends with "N passed, M failed" and a
// non-zero exit status if any failed. Each test program includes this once. Every check is also a
// heartbeat for the watchdog (watchdog.hpp), which aborts a program that stops making checks.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

#include "watchdog.hpp"

namespace test_check {

inline long passed = 0;
inline long failed = 0;
inline int reported = 0;

// A check passed (each check, passed or failed, is also the watchdog's heartbeat).
inline void record_pass() noexcept {
    test_watchdog::beat();
    ++passed;
}

inline void report_failure(const char* file, int line, const std::string& what) {
    test_watchdog::beat();
    ++failed;
    if (++reported <= 30) std::fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, what.c_str());
    if (reported == 30) std::fprintf(stderr, "(further failures not shown)\n");
}

// "got ... expected ..." with the first differing character, for two texts that differ.
inline std::string difference(const std::string& actual, const std::string& expected) {
    std::size_t at = 0;
    while (at < actual.size() && at < expected.size() && actual[at] == expected[at]) ++at;
    return ": got \"" + actual.substr(0, 80) + "\" expected \"" + expected.substr(0, 80) +
           "\" (first difference at char " + std::to_string(at) + " of " +
           std::to_string(expected.size()) + ")";
}

}  // namespace test_check

#define CHECK(cond)                                                             \
    do {                                                                        \
        if (cond) {                                                             \
            test_check::record_pass();                                          \
        } else {                                                                \
            test_check::report_failure(__FILE__, __LINE__, "CHECK(" #cond ")"); \
        }                                                                       \
    } while (0)

#define CHECK_EQ_STR(actual, expected, context)                                                \
    do {                                                                                       \
        const std::string a_ = (actual);                                                       \
        const std::string e_ = (expected);                                                     \
        if (a_ == e_) {                                                                        \
            test_check::record_pass();                                                         \
        } else {                                                                               \
            test_check::report_failure(__FILE__, __LINE__,                                     \
                                       std::string(context) + test_check::difference(a_, e_)); \
        }                                                                                      \
    } while (0)
