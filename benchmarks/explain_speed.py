"""How fast the error explainer answers, and how many real messages it explains (issue 17).

    .venv/bin/python benchmarks/explain_speed.py

Times `explain_text` on every message of tests/data/explain_corpus.jsonl (real messages from public
issue threads) once course_lib is imported and warm, and prints the median and the slowest per
message, then the coverage figures on the whole corpus and on its held-out fifth, and issue 35's
three figures on the frozen collections 2-5 (explained with an acceptable chapter, by a specific
entry or a family, unrelated claimed). A measurement, not a test: the test suite only holds a
generous bound.
"""

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from course_lib.explainer import explain_text  # noqa: E402


def corpus() -> list:
    """The corpus rows."""
    path = ROOT / "tests" / "data" / "explain_corpus.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def right(row: dict) -> bool:
    """A GPU-training message got its entry and chapter; an unrelated one was not claimed."""
    exp = explain_text(row["message"])
    if row["kind"] == "gpu":
        return exp.known and exp.entry.id == row["entry"] and exp.entry.chapter == row["chapter"]
    return not exp.known


def timings(rows: list, rounds: int = 5) -> list:
    """Seconds per message: the median of `rounds` runs of each message."""
    for row in rows:  # warm up: compiled patterns, caches
        explain_text(row["message"])
    per_message = []
    for row in rows:
        runs = []
        for _ in range(rounds):
            start = time.perf_counter()
            explain_text(row["message"])
            runs.append(time.perf_counter() - start)
        per_message.append(statistics.median(runs))
    return per_message


def figures(rows: list) -> str:
    """'x/y right, a/b claimed' for the GPU-training and the unrelated messages of `rows`."""
    gpu = [r for r in rows if r["kind"] == "gpu"]
    other = [r for r in rows if r["kind"] != "gpu"]
    ok = sum(right(r) for r in gpu)
    claimed = sum(not right(r) for r in other)
    return (
        f"GPU-training: {ok}/{len(gpu)} right entry and chapter ({ok / len(gpu):.1%}); "
        f"unrelated: {claimed}/{len(other)} claimed ({claimed / len(other):.1%})"
    )


HELDOUT = tuple(f"explain_heldout_{n}.jsonl" for n in (2, 3, 4, 5))


def heldout_figures(name: str) -> str:
    """Issue 35's three figures on one frozen collection."""
    path = ROOT / "tests" / "data" / name
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    gpu = [r for r in rows if r["kind"] == "gpu"]
    tiers = [
        e.tier
        for r in gpu
        if (e := explain_text(r["message"])).known and e.entry.chapter in r["chapters"]
    ]
    other = [r for r in rows if r["kind"] != "gpu"]
    claimed = sum(explain_text(r["message"]).known for r in other)
    return (
        f"{name}: {len(tiers)}/{len(gpu)} acceptable chapter ({len(tiers) / len(gpu):.1%}; "
        f"{tiers.count('specific')} specific, {tiers.count('family')} family); "
        f"unrelated {claimed}/{len(other)} claimed ({claimed / len(other):.1%})"
    )


def main() -> None:
    rows = corpus()
    times = sorted(timings(rows))
    print(
        f"{len(rows)} real messages, {len(set(len(r['message']) for r in rows))} lengths "
        f"(up to {max(len(r['message']) for r in rows)} characters)"
    )
    print(
        f"median {statistics.median(times) * 1000:.3f} ms per message, 90th percentile "
        f"{times[int(len(times) * 0.9)] * 1000:.3f} ms, slowest {times[-1] * 1000:.3f} ms"
    )
    print("whole corpus:  ", figures(rows))
    print("held-out fifth:", figures([r for r in rows if r["holdout"]]))
    for name in HELDOUT:
        print(heldout_figures(name))


if __name__ == "__main__":
    main()
