"""Shared test setup: progress goes to a throwaway file; notebooks are found once."""
import os
import tempfile
from pathlib import Path

os.environ.setdefault("COURSE_PROGRESS_FILE", str(Path(tempfile.mkdtemp()) / "progress.json"))
os.environ.setdefault("MPLBACKEND", "Agg")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
