// The thread pool (common/thread_pool.hpp): every part runs once, and a child forked while another
// thread of its parent holds the pool's creation lock still gets a pool of its own (the child has
// none of the parent's threads, so a lock it inherits held would never be released). A child that
// hangs is killed after a limit and fails the test instead of stalling it.
//
//   thread_pool_tests
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "check.hpp"
#include "common/thread_pool.hpp"

#if defined(__unix__) || defined(__APPLE__)
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#define TENSORB64_TEST_FORK 1
#endif

namespace tb = tensorb64;

namespace {

// Whether run_parts(parts) runs each part exactly once.
bool runs_every_part_once(std::size_t parts) {
    std::vector<std::atomic<int>> runs(parts);
    tb::run_parts(parts, [&](std::size_t part) { runs[part].fetch_add(1); });
    for (const std::atomic<int>& count : runs) {
        if (count.load() != 1) return false;
    }
    return true;
}

void test_every_part_once() {
    for (std::size_t parts : {0u, 1u, 2u, 3u, 8u, 64u}) CHECK(runs_every_part_once(parts));
}

#if defined(TENSORB64_TEST_FORK)
// Forks while another thread holds the pool's creation lock (released `hold` later); the child
// splits work across the pool. True when the child finished it within `limit`.
bool child_gets_a_pool_while_creation_lock_held(std::chrono::milliseconds hold,
                                                std::chrono::seconds limit) {
    std::mutex m;
    std::condition_variable cv;
    bool held = false;
    std::thread holder([&] {
        std::unique_lock<std::mutex> creation(tb::pool_creation_lock());
        {
            std::lock_guard<std::mutex> lock(m);
            held = true;
        }
        cv.notify_one();
        std::this_thread::sleep_for(hold);
    });
    {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return held; });
    }
    const pid_t child = fork();
    if (child == 0) _exit(runs_every_part_once(4) ? 0 : 1);
    holder.join();
    if (child < 0) {
        std::fprintf(stderr, "fork failed\n");
        return false;
    }
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    while (waitpid(child, &status, WNOHANG) == 0) {
        test_watchdog::beat();
        if (std::chrono::steady_clock::now() > deadline) {
            std::fprintf(stderr, "the forked child hung creating its pool: killed\n");
            kill(child, SIGKILL);
            waitpid(child, &status, 0);
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void test_fork() {
    // Before this process has a pool, then after.
    CHECK(child_gets_a_pool_while_creation_lock_held(std::chrono::milliseconds(200),
                                                     std::chrono::seconds(20)));
    CHECK(runs_every_part_once(4));
    CHECK(child_gets_a_pool_while_creation_lock_held(std::chrono::milliseconds(200),
                                                     std::chrono::seconds(20)));
    CHECK(runs_every_part_once(4));  // the parent's pool still works
}
#endif

}  // namespace

int main() {
    test_every_part_once();
#if defined(TENSORB64_TEST_FORK)
    test_fork();
#endif
    std::printf("thread_pool_tests: %ld passed, %ld failed\n", test_check::passed,
                test_check::failed);
    return test_check::failed == 0 ? 0 : 1;
}
