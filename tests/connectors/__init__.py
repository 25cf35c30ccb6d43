"""Tests of connectors/ against the emulator and a moto S3 server."""
