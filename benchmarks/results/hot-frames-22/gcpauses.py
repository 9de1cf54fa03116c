"""Every garbage collection's (generation, ms, objects collected), appended to `pauses`
as it ends (`ratiogc.py`, `tailgc.py`)."""
import gc
import time

pauses = []
_started = {}


def _callback(phase, info):
    if phase == "start":
        _started["t"] = time.perf_counter()
    else:
        pauses.append((info["generation"], (time.perf_counter() - _started["t"]) * 1e3, info["collected"]))


gc.callbacks.append(_callback)
