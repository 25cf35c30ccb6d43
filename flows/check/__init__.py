"""The check job: its options and its runner."""
