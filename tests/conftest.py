"""Shared test setup: progress goes to a throwaway file; notebooks are found once."""
import os
import tempfile
from pathlib import Path

os.environ.setdefault("COURSE_PROGRESS_FILE", str(Path(tempfile.mkdtemp()) / "progress.json"))
# One compute thread: small models run as fast, and notebooks stay quick on a busy 2-core machine
# (nbval's kernels inherit this).
os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
