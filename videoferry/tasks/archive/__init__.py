"""The archive job's steps: plan, recording, destination, files, schedule, report."""
