"""The setup job's steps: plan, up (each write exactly once), outputs, DRM check."""
