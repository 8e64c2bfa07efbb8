"""The test suite. A package, so that its helpers (tests.support) are imported by one name from the
tests, from the subprocesses the tests start and from the benchmarks (run from the repository root)."""
