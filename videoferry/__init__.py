"""videoferry as a Python library."""
