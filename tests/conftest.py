"""Shared test setup: progress goes to a throwaway file; notebooks (both editions) are found once."""
import os
import tempfile
from pathlib import Path

os.environ.setdefault("COURSE_PROGRESS_FILE", str(Path(tempfile.mkdtemp()) / "progress.json"))
# One compute thread: small models run as fast, and notebooks stay quick on a busy 2-core machine
# (nbval's kernels inherit this).
os.environ.setdefault("OMP_NUM_THREADS", "1")
# The tests read the English edition's messages; a Chinese notebook turns Chinese on itself.
os.environ["COURSE_LANG"] = "en"

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))          # the English edition
ZH_NOTEBOOKS = sorted((ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb"))  # the Chinese edition
EDITIONS = NOTEBOOKS + ZH_NOTEBOOKS   # both: for what holds of every notebook, whatever its language
