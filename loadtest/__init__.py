"""Benchmarks and (later) the floor simulator and load test."""
