"""The check job's steps: listing, compare, sources, adopt, report."""
