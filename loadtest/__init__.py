"""Test tooling: the load test, the fault suite, the soak and the benchmarks (run from the
repository; not in the wheel or the image). The floor simulator they drive is the product's
:mod:`jackpot.sim`."""
