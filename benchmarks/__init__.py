"""Benchmarks, run from the repository root (`python -m benchmarks.vllm_server_bench`, ...): a package
so that they import the tests' shared helpers (tests.support) by name."""
