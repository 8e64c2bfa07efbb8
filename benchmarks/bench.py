"""tensorb64 against the struct, numpy and pybase64 paths; the same program as `python -m tensorb64 bench`.

    python benchmarks/bench.py                      # quick (under a minute)
    python benchmarks/bench.py --full --json benchmarks/results/results.json \
        --plot benchmarks/results/throughput.png --table benchmarks/results/table.md

The implementation lives in the package (tensorb64/_bench.py) so that an installed wheel can run it.
"""

import sys

from tensorb64._bench import main

if __name__ == "__main__":
    sys.exit(main())
