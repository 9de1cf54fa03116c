"""Runs after the other test modules of tests/ (pytest collects them in name order):
every reader the suite opened has been closed, so no `cortex-secondary-<pid>-*`
folder of this process is left in the temporary folder.

(A reader that is never closed keeps its folder until a later reader of any process
finds its process gone: see tests/test_open_paths.py.)
"""

from __future__ import annotations

import gc
import os
import tempfile


def test_the_suite_left_no_reader_folders_of_its_own():
    gc.collect()
    prefix = f"cortex-secondary-{os.getpid()}-"
    left = sorted(name for name in os.listdir(tempfile.gettempdir()) if name.startswith(prefix))
    assert left == []
