"""Real media for the emulator and the tests (PyAV): probe, cut / concat and small test clips."""

from videoferry.emulator.media.clips import make_clip
from videoferry.emulator.media.edit import concat, cut
from videoferry.emulator.media.probe import MediaInfo, probe

__all__ = ["MediaInfo", "concat", "cut", "make_clip", "probe"]
