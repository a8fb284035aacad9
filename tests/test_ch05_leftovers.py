"""Chapter 05's leftovers of issue 36, item 9: graph-break reasons shown whole with what they mean,
the workers' epochs over repeats, chapter 05's feedback without English inside the Chinese, and
the profile quiz judged against the learner's own profile."""

import pytest

from course_lib import ch05_speedups as ch
from course_lib.i18n.catalogue import CJK, in_language
from course_lib.i18n.layout import width

PRINT_BREAK = (  # torch 2.13's reason for PrintingNet's graph break (torch._dynamo.explain)
    "Failed to trace builtin operator\n  Explanation: Dynamo does not know how to trace builtin "
    "operator `print` with argument types ['str'] (has_kwargs False)\n  Hint: Avoid calling "
    "builtin `print` with argument types ['str']. Consider using an equivalent alternative "
    "function/method to `print`.\n  Hint: Please report an issue to PyTorch.\n\n  Developer "
    "debug context: builtin print [<class 'torch._dynamo.variables.constant.ConstantVariable'>] "
    "False\n\n For more details about this graph break, please visit: "
    "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html"
)
UNKNOWN_BREAK = (
    "Unsupported context manager\n  Explanation: Dynamo does not know how to enter a "
    "`SomeManager` context manager.\n  Hint: Avoid using the context manager `SomeManager` in "
    "compiled code."
)


def words(text: str) -> list:
    return text.split()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_known_graph_break_is_summarized_and_pytorchs_words_are_whole(lang):
    with in_language(lang):
        shown = ch.show_graph_break(PRINT_BREAK)
    lines = shown.splitlines()
    assert all(width(line) <= 96 for line in lines), lines
    assert "..." not in shown  # nothing cut off
    said = shown[shown.index("PyTorch") :]
    for word in (
        "Explanation:",
        "`print`",
        "(has_kwargs",
        "False)",
        "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html",
    ):
        assert word in words(said), said  # each word whole, wrapped between words
    assert "Developer" not in shown and "Hint:" not in shown  # PyTorch's notes to itself
    summary = lines[0]
    if lang == "zh":
        assert summary.startswith("    图中断的原因：forward 里有 `print`") and CJK.search(summary)
        assert "PyTorch 的原话：Failed to trace builtin operator. Explanation:" in shown
    else:
        assert summary.startswith("    why it broke: a `print` in forward")


def test_an_if_on_a_value_is_summarized_and_an_unknown_reason_is_shown_whole():
    with in_language("zh"):
        value = ch.show_graph_break("generic_jump TensorVariable()")
        unknown = ch.show_graph_break(UNKNOWN_BREAK)
    assert "张量的值" in value and value.endswith("generic_jump TensorVariable()")
    assert "图中断的原因" not in unknown  # no summary of ours: PyTorch's words, hints included
    assert " ".join(words(unknown)).endswith("`SomeManager` in compiled code.")
    assert "Hint:" in unknown
