"""Chaos suite: migrations under the emulator's fault injection and kill -9 (pytest -m chaos)."""
