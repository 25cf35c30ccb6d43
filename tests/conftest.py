"""Suite-wide setup: a temporary PREFECT_HOME, quiet Prefect logging, shared fixtures as plugins."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

# Set before anything imports Prefect: Prefect reads its settings at import time.
_PREFECT_HOME = tempfile.mkdtemp(prefix="videoferry-prefect-")
os.environ["PREFECT_HOME"] = _PREFECT_HOME
# Removed when the process ends (registered first: it runs after Prefect's own exit handlers, which may still
# write there); every pytest process (xdist workers too) used to leave its 5 MB home in the temp dir.
atexit.register(shutil.rmtree, _PREFECT_HOME, ignore_errors=True)
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_LOGGING_TO_API_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
os.environ.pop("PREFECT_API_URL", None)
# Never point a test at anything but loopback: drop any real service configuration.
for _name in (
    "VIDEOFERRY_API_URL",
    "VIDEOFERRY_UPLOAD_URL",
    "VIDEOFERRY_TOKEN",
    "VIDEOFERRY_VIMEO_TOKEN",
    "VIDEOFERRY_VIMEO_API_URL",
    "VIDEOFERRY_WISTIA_TOKEN",
    "VIDEOFERRY_WISTIA_API_URL",
):
    os.environ.pop(_name, None)

pytest_plugins = [
    "tests.fixtures.emulator",
    "tests.fixtures.media",
    "tests.fixtures.order",
    "tests.fixtures.platforms",
    "tests.fixtures.prefect",
    "tests.fixtures.redis",
    "tests.fixtures.s3",
]
