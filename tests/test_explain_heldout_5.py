"""The explainer on the fifth collection (issue 35, item 6), frozen before the explainer ran on it.

`tests/data/explain_heldout_5.jsonl`: 75 PyTorch GPU-training errors and 36 unrelated ones, from
GitHub threads of libraries built on PyTorch (Lightning, transformers/accelerate/peft/trl,
DeepSpeed, detectron2, the mm* family, fairseq, ComfyUI...) and of other CUDA programs and plain
Python (TensorFlow, JAX, Paddle, MXNet, numba, CTranslate2, onnxruntime, ollama, Blender, ffmpeg,
NumPy, gunicorn), no thread shared with collections 1-4 (tests/data/README.md). Collected after
the general shared-text rule (8151746) was written; frozen by the commit "freeze collection 5"
(bd74a62, sha256 below). Measured on its first run, with the explainer of that commit:

- explained with an acceptable chapter: 64 of 75 (85.3%), 53 by a specific entry, 11 by the family
  tier: under the issue's 90% goal. Misses: shared CUDA text with no word of PyTorch's beside it,
  which the rule now leaves unknown, 6 (titles and sentences: "CUDA out of memory After 74
  epochs" e003, "[Bug] RuntimeError: CUDA out of memory" e004, "no kernel image is available"
  e010/e012, "CUDA error: an illegal memory access" e048/e049); MPS out of memory named in a title
  only (e061); the DataLoader's "Unexpected bus error encountered in worker" (e035); a graph break
  behind Dynamo's log prefix (e038); FSDP's "sharded_state_dict can only be used" (e044) and
  accelerate's "couldn't be switched to its sharded version" (e046).
- unrelated claimed: 0 of 36 (0%).
- For comparison, the explainer before the rule (1883c9d), on the same frozen rows: 70 of 75
  (93.3%; 59 specific, 11 family) but 8 of 36 unrelated claimed (22.2%: CTranslate2's, ollama's,
  Paddle's, onnxruntime's and Blender's CUDA texts). The rule traded 6 PyTorch rows that say
  nothing PyTorch's own for 8 false claims.

The thresholds below are the first-run figures: not raised after fixes.

After fixes made having seen those misses (figures seen after, so not a held-out measurement):
69 of 75 (92.0%; 56 specific, 13 family), unrelated claimed 0 of 36. The fixes, each a wording
of PyTorch's own: the DataLoader's bus-error handler, Dynamo's `[__graph_breaks]` log, FSDP's
`sharded_state_dict` check, the MPS allocator's "MPS backend out of memory" and Python's
RuntimeError around "CUDA out of memory" as PyTorch evidence. Left unknown: the five titles that
quote only CUDA's shared text (e003, e010, e012, e048, e049) and accelerate's own message (e046).
"""

import hashlib
import json

import pytest

from course_lib.explainer import explain_text
from support import ROOT

HELDOUT = ROOT / "tests" / "data" / "explain_heldout_5.jsonl"
FROZEN_SHA256 = "4d74907a03452b62578da761f516769d7532948c65f1740eb720a59bad8ecfa3"
FIRST_RUN = {"explained": 64, "specific": 53}  # of 75; 0 of 36 unrelated claimed


def _rows(kind):
    """The frozen collection's rows of one kind."""
    rows = [json.loads(line) for line in HELDOUT.read_text(encoding="utf-8").splitlines()]
    return [r for r in rows if r["kind"] == kind]


def test_the_fifth_collection_is_the_frozen_one():
    """The file is the one committed at the freeze, with its sources and labels."""
    assert hashlib.sha256(HELDOUT.read_bytes()).hexdigest() == FROZEN_SHA256
    gpu, unrelated = _rows("gpu"), _rows("unrelated")
    assert len(gpu) == 75 and len(unrelated) == 36
    assert all(r["source"].startswith("https://github.com/") for r in gpu + unrelated)
    assert all(r["chapters"] for r in gpu) and not any(r["chapters"] for r in unrelated)


def test_the_fifth_collection_is_explained_at_least_as_on_its_first_run():
    """At least the first run's 64 of 75 get an acceptable chapter, 53 by a specific entry."""
    tiers = [
        e.tier
        for r in _rows("gpu")
        if (e := explain_text(r["message"])).known and e.entry.chapter in r["chapters"]
    ]
    assert len(tiers) >= FIRST_RUN["explained"], len(tiers)
    assert tiers.count("specific") >= FIRST_RUN["specific"], tiers.count("specific")


def test_no_unrelated_error_of_the_fifth_collection_is_claimed():
    """Other CUDA programs' and plain Python's errors stay unknown: 0 of 36, as on the first run."""
    claimed = {r["id"] for r in _rows("unrelated") if explain_text(r["message"]).known}
    assert not claimed, sorted(claimed)


# PyTorch's own wordings behind five of the first run's misses, as PyTorch prints them
SEEN_AFTER = [
    (
        "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
        "shared memory (shm).",
        "05",
    ),
    (
        "V0618 09:39:34.577000 1 torch/_dynamo/symbolic_convert.py:436] [0/0] [__graph_breaks] "
        "Reason: Unsupported: Graph break due to unsupported builtin time.sleep.",
        "05",
    ),
    (
        "RuntimeError: ``sharded_state_dict`` can only be used when parameters are flatten and "
        "sharded.",
        "08",
    ),
    ("MPS backend out of memory (MPS allocated: 1.00 GB, other allocations: 2.00 MB)", "06"),
    ("[Bug] RuntimeError: CUDA out of memory", "06"),
]


@pytest.mark.parametrize("text,chapter", SEEN_AFTER, ids=[c for _, c in SEEN_AFTER])
def test_the_wordings_fixed_after_the_first_run_get_their_chapter(text, chapter):
    """Fixed having seen the first run's misses: each is PyTorch's own text."""
    exp = explain_text(text)
    assert exp.known and exp.entry.chapter == chapter, (exp.entry and exp.entry.id, text)
