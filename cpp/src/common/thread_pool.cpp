// A minimal persistent pool: a queue of batches, each a count of parts claimed through an atomic
// counter by whichever thread gets there first (the caller included), so a batch finishes even
// when the pool has fewer threads than parts, or none.
#include "common/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include <cstdlib>

#if defined(__unix__) || defined(__APPLE__)
#include <pthread.h>
#include <unistd.h>
#define TENSORB64_HAVE_ATFORK 1
#endif

namespace tensorb64 {
namespace {

// More threads than this gain nothing on any machine this runs on, and bound what a bad
// argument can start.
constexpr std::size_t max_pool_threads = 256;

struct batch {
    const std::function<void(std::size_t)>* task;
    std::size_t parts;
    std::atomic<std::size_t> next{0};
    std::size_t completed = 0;  // guarded by the pool's mutex
    std::size_t workers = 0;    // pool threads inside work_on(*this), guarded by the pool's mutex
    std::condition_variable finished;
};

class pool {
public:
    void run(std::size_t parts, const std::function<void(std::size_t)>& task) {
        batch b;
        b.task = &task;
        b.parts = parts;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            grow(std::min(parts - 1, max_pool_threads));
            pending_.push_back(&b);
        }
        wake_.notify_all();
        work_on(b);
        std::unique_lock<std::mutex> lock(mutex_);
        // Every part done, and no worker still holding a reference to `b` (it lives on this stack).
        b.finished.wait(lock, [&] { return b.completed == b.parts && b.workers == 0; });
        // Still queued if no worker looked at it: it must not outlive this frame in the queue.
        pending_.erase(std::remove(pending_.begin(), pending_.end(), &b), pending_.end());
    }

    // Claims and runs parts of `b` until none is left.
    void work_on(batch& b) {
        for (;;) {
            const std::size_t part = b.next.fetch_add(1, std::memory_order_relaxed);
            if (part >= b.parts) return;
            (*b.task)(part);
            std::lock_guard<std::mutex> lock(mutex_);
            if (++b.completed == b.parts) b.finished.notify_all();
        }
    }

    // Stops and joins the threads (at exit: a process ends with none of its threads left behind,
    // which keeps leak checkers quiet). No batch may be running.
    void shutdown() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        for (std::thread& t : threads_) t.join();
        threads_.clear();
    }

#if defined(TENSORB64_HAVE_ATFORK)
    const pid_t creator = getpid();  // a forked child inherits this object but none of its threads
#endif

private:
    void worker() {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            wake_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
            if (pending_.empty()) return;  // stopping
            batch& b = *pending_.front();
            if (b.next.load(std::memory_order_relaxed) >= b.parts) {
                pending_.pop_front();  // every part claimed: the batch's caller waits for the rest
                continue;
            }
            ++b.workers;
            lock.unlock();
            work_on(b);
            lock.lock();
            if (--b.workers == 0) b.finished.notify_all();
        }
    }

    void grow(std::size_t wanted) {  // with mutex_ held
        while (threads_.size() < wanted) {
            try {
                threads_.emplace_back([this] { worker(); });
            } catch (...) {  // std::system_error: no thread to be had; the caller does the work
                return;
            }
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<batch*> pending_;
    std::vector<std::thread> threads_;
    bool stopping_ = false;  // guarded by mutex_
};

std::atomic<pool*> the_pool{nullptr};
std::mutex creation;

#if defined(TENSORB64_HAVE_ATFORK)
// A forked child has none of the parent's threads: it gets a new pool of its own on first use, the
// parent's abandoned there. The creation lock is held across the fork, so that the child never
// inherits it held by a thread it does not have. Registered at load, before anyone can hold it.
const bool fork_handlers_registered = [] {
    return pthread_atfork([] { creation.lock(); }, [] { creation.unlock(); },
                          [] {
                              the_pool.store(nullptr, std::memory_order_relaxed);
                              creation.unlock();
                          }) == 0;
}();
#endif

pool& get_pool() {
    pool* p = the_pool.load(std::memory_order_acquire);
    if (p != nullptr) return *p;
    std::lock_guard<std::mutex> lock(creation);
    p = the_pool.load(std::memory_order_relaxed);
    if (p == nullptr) {
        // Never destroyed (a thread may still be using it while statics are torn down); its
        // threads are joined at exit.
        p = new pool();
        static const bool registered = [] {
            std::atexit([] {
                pool* current = the_pool.load(std::memory_order_acquire);
#if defined(TENSORB64_HAVE_ATFORK)
                if (current != nullptr && current->creator != getpid()) return;  // not ours to join
#endif
                if (current != nullptr) current->shutdown();
            });
            return true;
        }();
        (void)registered;
        the_pool.store(p, std::memory_order_release);
    }
    return *p;
}

}  // namespace

std::mutex& pool_creation_lock() noexcept { return creation; }

void run_parts(std::size_t parts, const std::function<void(std::size_t)>& task) {
    if (parts == 0) return;
    if (parts == 1) {
        task(0);
        return;
    }
    get_pool().run(parts, task);
}

}  // namespace tensorb64
