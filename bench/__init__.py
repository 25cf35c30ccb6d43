"""Benchmarks that print ratios against the limits; run with `make bench` or `python -m bench`."""
