# ruff: noqa: E501
"""English comments still in the Chinese code cells (issue 36), one line each, by chapter.

TEMPORARY: `test_no_english_comment_is_left_in_chinese_code_cells` lets these (and only these)
stay while chapters are translated; translate a comment in notebooks/zh/, then delete its line
here (the test fails on a line whose comment is gone). Empty means done."""

PENDING = {}
