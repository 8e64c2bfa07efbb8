"""`python -m tensorb64 bench`: tensorb64 against the paths embedding servers and clients use today.

Every comparison is a ratio taken side by side in one process (timing.py: interleaved rounds,
medians). One runner (runner.py, whose SECTIONS table lists the sections) and a module per
section; report.py (the machine, the tables), allocator.py (glibc's allocator states, page
costs), os_facts.py (what this OS lets the bench measure), plot.py (--plot).

Needs the bench extra: pip install "tensorb64[bench]". Nothing here is imported by
`import tensorb64`. The repository's own benches (benchmarks/: real servers, Ray and Daft
pipelines) run sections of their own through the same runner.
"""
