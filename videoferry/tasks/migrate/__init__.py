"""The migrate job's steps: plan, create, upload, reconcile, readiness, finish, schedule, report."""
