"""The explainer on the third collection (issue 35), frozen before the explainer was run on it.

`tests/data/explain_heldout_3.jsonl`: 86 PyTorch GPU-training errors and 32 unrelated ones
from 107 repositories, no thread shared with the earlier files (tests/data/README.md). Measured
on its first run, at commit 27d222a (the freeze), with the explainer unchanged since:

- explained with an acceptable chapter: 79 of 86 (91.9%), 64 by a specific entry, 15 by the
  family tier; misses: DataLoader 3 (t055, t056, t058: "Can't pickle/get local object
  ...<lambda>" without a DataLoader frame), sharding 2 (t117, t118: FSDP's "Must flatten tensors
  with uniform dtype"), availability 1 (t018: the web UI's "Torch is not able to use GPU"),
  dtype 1 (t028: a message cut to "RuntimeError: expecte").
- unrelated claimed: 4 of 32 (12.5%), all OpenCV's "Insufficient memory ... cv::OutOfMemoryError"
  (t095-t098), taken by the `cuda_oom` entry: above the issue's 5% limit.

The thresholds sit just below the measured figures, so they catch a regression; the 5% goal
is an expected failure until the OpenCV claims are fixed (strict: it fails once they are, to be
turned into a plain assertion then).
"""

import hashlib
import json

from course_lib.explainer import explain_text
from support import ROOT

HELDOUT = ROOT / "tests" / "data" / "explain_heldout_3.jsonl"
FROZEN_SHA256 = "22e3dce1b90900f3cdbe9ac7b6459937bc9378e729113bbbbfb33caffdc521ac"
KNOWN_FALSE_CLAIMS = set()  # at the freeze: t095-t098, OpenCV's cv::OutOfMemoryError (fixed after)


def _rows(kind):
    """The frozen collection's rows of one kind."""
    rows = [json.loads(line) for line in HELDOUT.read_text(encoding="utf-8").splitlines()]
    return [r for r in rows if r["kind"] == kind]


def _claimed():
    """The ids of the unrelated rows the explainer claims."""
    return {r["id"] for r in _rows("unrelated") if explain_text(r["message"]).known}


def test_the_third_collection_is_the_frozen_one():
    """The file is the one committed at the freeze: its figures are only valid for it."""
    assert hashlib.sha256(HELDOUT.read_bytes()).hexdigest() == FROZEN_SHA256
    assert len(_rows("gpu")) == 86 and len(_rows("unrelated")) == 32


def test_the_third_collection_is_explained_as_measured():
    """At least 78 of 86 get an acceptable chapter, at least 62 of them by a specific entry."""
    tiers = [
        e.tier
        for r in _rows("gpu")
        if (e := explain_text(r["message"])).known and e.entry.chapter in r["chapters"]
    ]
    assert len(tiers) >= 78, len(tiers)
    assert tiers.count("specific") >= 62, tiers.count("specific")


def test_no_unrelated_error_of_the_third_collection_is_newly_claimed():
    """Beyond the four OpenCV messages measured at the freeze, no unrelated error is claimed."""
    assert _claimed() <= KNOWN_FALSE_CLAIMS, sorted(_claimed() - KNOWN_FALSE_CLAIMS)


def test_at_most_five_percent_of_the_unrelated_errors_are_claimed():
    """Issue 35's goal: at most 5% of the unrelated errors are claimed. Measured at the freeze:
    4/32 (12.5%, OpenCV's `cv::OutOfMemoryError` taken for CUDA's); after `cuda_oom` stopped
    reading a C++ namespace's OutOfMemoryError as torch's: 0/32 (a figure seen after the misses)."""
    assert len(_claimed()) <= 0.05 * len(_rows("unrelated")), sorted(_claimed())
