"""benchmarks/torch_range.py's own parts (the runs themselves need other torch releases)."""

from support import ROOT, benchmark

torch_range = benchmark("torch_range")


def test_every_claim_file_the_script_names_exists():
    named = [path for files in torch_range.CLAIMS.values() for path in files]
    assert named and all((ROOT / path).is_file() for path in named), named


def test_pytests_quiet_closing_line_is_counted():
    for line, counts in (
        ("1 failed, 13 passed in 25.83s", {"failed": 1, "passed": 13}),
        ("===== 3 passed, 2 skipped in 4.1s =====", {"passed": 3, "skipped": 2}),
    ):
        closing = torch_range.CLOSING.findall(line)[-1]
        assert {k: int(n) for n, k in torch_range.COUNT.findall(closing)} == counts


def test_one_table_of_versions_and_rows():
    results = {
        "2.6.0": {"a": {"ok": True, "counts": {"passed": 3, "skipped": 1}}},
        "2.15.0": {"a": {"ok": False, "counts": {"failed": 1}}, "b": {"ok": True}},
    }
    assert torch_range.table(results).splitlines() == [
        "| | 2.6.0 | 2.15.0 |",
        "|---|---|---|",
        "| a | pass (3 passed) | FAIL (1 failed) |",
        "| b | - | pass |",
    ]
