"""Tests of the batch tasks."""
