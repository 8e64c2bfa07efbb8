"""tensorb64 against the paths servers and clients use today; the same program as `python -m tensorb64 bench`.

    python benchmarks/bench.py                      # the base64, body and client sections, quick
    python benchmarks/bench.py --full --json benchmarks/results/results.json \
        --plot benchmarks/results/throughput.png --table benchmarks/results/table.md

The implementation lives in the package (tensorb64/_bench/) so that an installed wheel can run it.
"""

import sys

from tensorb64._bench.runner import main

if __name__ == "__main__":
    sys.exit(main())
