"""The explainer on the fourth collection (issue 35, item 6), frozen before the explainer ran on it.

`tests/data/explain_heldout_4.jsonl`: 85 PyTorch GPU-training errors and 36 unrelated ones, from
the search tool's pages corpus (tutorials, Q&A and blog pages) and from GitHub threads found with
other search words and libraries than collections 1-3, no thread shared with them
(tests/data/README.md). Collected after issue 35's item-3 entries were written; frozen by the
commit "freeze collection 4" (sha256 below). Measured on its first run, with the explainer of the
commit before the freeze (f811675):

- explained with an acceptable chapter: 74 of 85 (87.1%), 60 by a specific entry, 14 by the
  family tier. Misses: HIP's "invalid device function" 3 (c041-c043), an in-place error spelled
  "in-place" (c048), "functions with out=... arguments don't support automatic differentiation"
  (c019), Dynamo's "Dynamo does not know how to trace" without its class (c025), Inductor frames
  behind vLLM's log prefix (c052), "Output size is too small" (c061), "doesn't match the broadcast
  shape" (c065), FSDP named only in a title (c035, c077).
- unrelated claimed: 10 of 36 (27.8%): onnxruntime's, CNTK's, Caffe's and Kaldi's cuBLAS/cuDNN
  codes taken by `cuda_library_failure` (c100, c103-c105, c111-c113), GGML's and ollama's "CUDA
  error: out of memory" by `cuda_oom` (c098, c099), ctranslate2's "CUDA failed with error CUDA
  driver version is insufficient" by `driver_too_old` (c089).

After fixes made having seen those misses (figures seen after, so not a held-out measurement):
85 of 85 (61 specific, 24 family), unrelated claimed 1 of 36 (2.8%: c099, ollama's title "CUDA
error: out of memory - Llama 3.2 3B on laptop", which says nothing that is not also PyTorch's).
The thresholds below guard the after-fix figures; the first-run ones stay the honest measurement.

After the general rule (issue 35, h-explain5: shared CUDA-runtime text needs PyTorch's evidence,
no list of frameworks): 84 of 85 (60 specific, 24 family), unrelated claimed 0 of 36. The one
lost, c027, is a title that quotes only "`CUDA error: out of memory`", the very text of c099.
"""

import hashlib
import json

from course_lib.explainer import explain_text
from support import ROOT

HELDOUT = ROOT / "tests" / "data" / "explain_heldout_4.jsonl"
FROZEN_SHA256 = "1a7e679f96bb52dc7b512ecee56e7832a89661ec381f06b26b12ab7b35b20f1b"
KNOWN_CLAIMS = set()  # c099 (ollama's bare "CUDA error: out of memory") no more


def _rows(kind):
    """The frozen collection's rows of one kind."""
    rows = [json.loads(line) for line in HELDOUT.read_text(encoding="utf-8").splitlines()]
    return [r for r in rows if r["kind"] == kind]


def test_the_fourth_collection_is_the_frozen_one():
    """The file is the one committed at the freeze, with its sources and labels."""
    assert hashlib.sha256(HELDOUT.read_bytes()).hexdigest() == FROZEN_SHA256
    gpu, unrelated = _rows("gpu"), _rows("unrelated")
    assert len(gpu) == 85 and len(unrelated) == 36
    assert all(r["source"].startswith("http") and r["route"] in ("pages", "issues") for r in gpu)
    assert all(r["chapters"] for r in gpu) and not any(r["chapters"] for r in unrelated)


def test_the_fourth_collection_is_explained_with_an_acceptable_chapter():
    """At least 90% (the issue's goal) get an acceptable chapter, most by a specific entry."""
    tiers = [
        e.tier
        for r in _rows("gpu")
        if (e := explain_text(r["message"])).known and e.entry.chapter in r["chapters"]
    ]
    assert len(tiers) >= 0.9 * len(_rows("gpu")), len(tiers)
    assert tiers.count("specific") >= 58, tiers.count("specific")


def test_other_frameworks_cuda_codes_of_the_fourth_collection_are_not_claimed():
    """At most 5% of the unrelated errors are claimed, and none beyond the one known claim."""
    claimed = {r["id"] for r in _rows("unrelated") if explain_text(r["message"]).known}
    assert claimed <= KNOWN_CLAIMS, sorted(claimed - KNOWN_CLAIMS)
    assert len(claimed) <= 0.05 * len(_rows("unrelated"))
