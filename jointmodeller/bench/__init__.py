"""Benchmark harness: `jointmodeller bench`.

Each module in this package is one group (its module name, e.g. ``dynamics``) and defines
``run() -> list[Figure]``. Every figure carries a baseline measured in the same run, so the ratio
is meaningful on a shared, noisy machine. Timings live here, never in tests.
"""
