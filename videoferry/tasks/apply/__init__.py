"""The apply job's steps: plan, units, calls, schedule, report."""
