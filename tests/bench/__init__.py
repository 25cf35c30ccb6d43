"""Tests that the benchmarks run (figures are printed, never asserted)."""
