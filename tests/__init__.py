"""Tests for videoferry."""
