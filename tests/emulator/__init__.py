"""Tests of the emulator, through raw HTTP."""
