"""Shared test setup: progress goes to a throwaway file; one compute thread.

What tests share (the checkout's root, the notebooks, helpers) is in tests/support.
"""

import os
import tempfile
from pathlib import Path

os.environ.setdefault("COURSE_PROGRESS_FILE", str(Path(tempfile.mkdtemp()) / "progress.json"))
# One compute thread: small models run as fast, and notebooks stay quick on a busy 2-core machine
# (nbval's kernels inherit this).
os.environ.setdefault("OMP_NUM_THREADS", "1")
# The tests read the English edition's messages; a Chinese notebook turns Chinese on itself.
os.environ["COURSE_LANG"] = "en"
