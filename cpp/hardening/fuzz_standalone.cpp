// A driver for a libFuzzer target (LLVMFuzzerTestOneInput) where libFuzzer is not there: under
// qemu-user (the aarch64 build, whose default level is NEON: fuzz_body then compares the NEON
// number parsers and base64 decoder with the scalar ones) and in the C++ tests' ctest runs. It
// replays the corpus given, then feeds the target mutations of it: bytes flipped, inserted, deleted
// or repeated, JSON's and numbers' tokens put in, two inputs spliced. No coverage guides it (that
// is libFuzzer's, in cpp/hardening/sanitize.sh); the target's own checks (a trap where the four
// readings differ) are the verdict, and the watchdog fails a run that hangs.
//
//   fuzz_body_standalone [-runs=N] [-seed=S] CORPUS_DIR_OR_FILE...
//       (defaults: 20000 runs, seed 1); prints the runs made and the inputs' sizes.
#include <dirent.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "../tests/watchdog.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The files of a directory (not recursive), or the file itself.
void collect(const std::string& path, std::vector<std::string>* inputs) {
    if (DIR* dir = opendir(path.c_str())) {
        while (const dirent* entry = readdir(dir)) {
            if (entry->d_name[0] == '.') continue;
            inputs->push_back(read_file(path + "/" + entry->d_name));
        }
        closedir(dir);
    } else {
        inputs->push_back(read_file(path));
    }
}

// What the bodies and rows are made of, put in whole: a mutation of one byte seldom makes them.
const char* const kTokens[] = {",",
                               "]",
                               "[",
                               "\"",
                               "0.",
                               "-0.",
                               "0.5",
                               "-0.00",
                               "1e-5",
                               "E+2",
                               " ",
                               ", ",
                               "\n",
                               "NaN",
                               "1",
                               "12.5",
                               "99999999",
                               ".",
                               "-",
                               "0",
                               "e",
                               "}",
                               "{",
                               "\\u0030",
                               "AAAA",
                               "=",
                               "\"embedding\":",
                               "\"index\":",
                               "0.123456789012345678",
                               "1234567890123456"};

std::string mutate(std::string s, const std::vector<std::string>& inputs, std::mt19937_64& rng) {
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
        const std::size_t at = s.empty() ? 0 : rng() % (s.size() + 1);
        switch (rng() % 7) {
            case 0:  // flip a byte
                if (!s.empty()) s[rng() % s.size()] ^= static_cast<char>(1u << (rng() % 8));
                break;
            case 1:  // a random byte in
                s.insert(at, 1, static_cast<char>(rng()));
                break;
            case 2:  // bytes out
                if (!s.empty()) s.erase(rng() % s.size(), 1 + rng() % 8);
                break;
            case 3:  // a token in
                s.insert(at, kTokens[rng() % (sizeof kTokens / sizeof kTokens[0])]);
                break;
            case 4:  // a run of bytes repeated
                if (!s.empty()) {
                    const std::size_t from = rng() % s.size();
                    s.insert(at, s.substr(from, 1 + rng() % 64));
                }
                break;
            case 5:  // spliced with another input
                if (!inputs.empty()) {
                    const std::string& other = inputs[rng() % inputs.size()];
                    if (!other.empty()) s = s.substr(0, at) + other.substr(rng() % other.size());
                }
                break;
            default:  // a byte set to one of the row's own
                if (!s.empty()) s[rng() % s.size()] = "0123456789.-,] e"[rng() % 16];
                break;
        }
    }
    if (s.size() > (1u << 16)) s.resize(1u << 16);
    return s;
}

}  // namespace

int main(int argc, char** argv) {
    long runs = 20000;
    unsigned long seed = 1;
    std::vector<std::string> inputs;
    for (int i = 1; i < argc; ++i) {
        if (std::strncmp(argv[i], "-runs=", 6) == 0) {
            runs = std::atol(argv[i] + 6);
        } else if (std::strncmp(argv[i], "-seed=", 6) == 0) {
            seed = std::strtoul(argv[i] + 6, nullptr, 10);
        } else {
            collect(argv[i], &inputs);
        }
    }
    std::size_t largest = 0;
    for (const std::string& input : inputs) {
        test_watchdog::beat();
        LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
        largest = input.size() > largest ? input.size() : largest;
    }
    std::mt19937_64 rng(seed);
    std::vector<std::string> pool = inputs;
    if (pool.empty()) pool.emplace_back();
    for (long r = 0; r < runs; ++r) {
        test_watchdog::beat();
        const std::string input = mutate(pool[rng() % pool.size()], pool, rng);
        LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
        if (rng() % 64 == 0 && pool.size() < 4096) pool.push_back(input);  // mutations of mutations
        largest = input.size() > largest ? input.size() : largest;
    }
    std::printf(
        "fuzz_standalone: %zu corpus inputs and %ld mutations run (seed %lu, largest %zu "
        "bytes), no difference\n",
        inputs.size(), runs, seed, largest);
    return 0;
}
