// A hang must fail a test program fast, never stall it: every test program that includes this
// (through check.hpp, or directly) runs a watchdog thread from start-up. Each check calls
// test_watchdog::beat(); when no check has been made for TENSORB64_TEST_TIMEOUT seconds (default
// 120), the watchdog prints every thread's stack (glibc: backtrace() in each thread, through a
// signal) and aborts. The gap between two checks is timed, not the whole run, so one limit serves
// the quick and the full runs: core_tests and float_text_tests pass with a limit of 5 s on a
// 2-core machine at a load of 11 (unoptimised build); sanitize.sh gives valgrind and run_cross.sh
// gives qemu 600 s.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#if defined(__GLIBC__)
#include <dirent.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace test_watchdog {

inline std::atomic<unsigned long> beats{0};

// A check was made: the program is not stuck. Relaxed and lock-free: millions of checks a second.
inline void beat() noexcept {
    beats.store(beats.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

#if defined(__GLIBC__)
inline std::atomic<bool> stack_written{false};

inline void write_text(const char* text) noexcept {
    std::size_t n = 0;
    while (text[n] != '\0') ++n;
    if (::write(2, text, n) < 0) return;
}

// The signal handler: this thread's stack, to stderr (backtrace was called once at start-up, so
// it does not load libgcc here).
inline void write_own_stack(int) {
    void* frames[64];
    const int n = backtrace(frames, 64);
    char header[48];
    std::snprintf(header, sizeof header, "--- thread %ld:\n",
                  static_cast<long>(syscall(SYS_gettid)));
    write_text(header);
    backtrace_symbols_fd(frames, n, 2);
    stack_written.store(true);
}

// Every other thread of the process writes its stack, one after the other.
inline void write_every_stack() {
    struct sigaction action {};
    action.sa_handler = write_own_stack;
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR2, &action, nullptr);
    const long self = syscall(SYS_gettid);
    DIR* tasks = opendir("/proc/self/task");
    if (tasks == nullptr) return;
    while (const dirent* entry = readdir(tasks)) {
        const long tid = std::atol(entry->d_name);
        if (tid <= 0 || tid == self) continue;
        stack_written.store(false);
        if (syscall(SYS_tgkill, getpid(), tid, SIGUSR2) != 0) continue;
        for (int waited = 0; waited < 200 && !stack_written.load(); ++waited)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    closedir(tasks);
}
#endif

class watchdog {
public:
    watchdog() {
        const char* setting = std::getenv("TENSORB64_TEST_TIMEOUT");
        const long seconds = setting != nullptr ? std::atol(setting) : 0;
        limit_ = std::chrono::seconds(seconds > 0 ? seconds : 120);
#if defined(__GLIBC__)
        void* frame;
        backtrace(&frame, 1);  // loads the unwinder now, not in a signal handler
#endif
        thread_ = std::thread([this] { watch(); });
    }
    ~watchdog() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }
    watchdog(const watchdog&) = delete;
    watchdog& operator=(const watchdog&) = delete;

private:
    void watch() {
        using clock = std::chrono::steady_clock;
        std::unique_lock<std::mutex> lock(mutex_);
        unsigned long seen = beats.load(std::memory_order_relaxed);
        clock::time_point last = clock::now();
        while (!wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; })) {
            const unsigned long now_beats = beats.load(std::memory_order_relaxed);
            if (now_beats != seen) {
                seen = now_beats;
                last = clock::now();
            } else if (clock::now() - last >= limit_) {
                std::fprintf(
                    stderr,
                    "\nTIMEOUT: no check made for %lld s (TENSORB64_TEST_TIMEOUT): a hang. "
                    "The stack of every thread follows (addr2line -Cfe PROGRAM +OFFSET names a\n"
                    "frame shown as an offset), then abort.\n",
                    static_cast<long long>(limit_.count()));
                std::fflush(stdout);
                std::fflush(stderr);
#if defined(__GLIBC__)
                write_every_stack();
#endif
                std::abort();
            }
        }
    }

    std::chrono::seconds limit_{120};
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;  // guarded by mutex_
    std::thread thread_;
};

// Started before main, stopped (joined) after it returns.
inline watchdog the_watchdog;

}  // namespace test_watchdog
