"""A local, spec-faithful emulator of the video service (API host and upload host)."""
