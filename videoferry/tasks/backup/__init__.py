"""The backup job's steps: what to back up, each video's steps exactly once, the root's index, reports."""
