"""The setup job's steps: compare (setup plan), up (each write exactly once), outputs, DRM check."""
