"""One vocabulary in the Chinese edition (issue 36), held against docs/zh/glossary.md.

The glossary's table of decided terms (English | 中文 | not these) is read here; in the Chinese
notebooks' markdown, `course_lib/i18n/zh.json` and `course_lib/key/zh.json`:
- no Chinese text uses a rejected variant;
- no Chinese text leaves the English term where it has a Chinese one (code, `{placeholders}` and
  the first-mention gloss `中文（English）` aside);
- a Chinese text whose English says the English term says the Chinese term.
"""

import json
import re

import pytest

from support import NOTEBOOKS, ROOT

GLOSSARY = ROOT / "docs" / "zh" / "glossary.md"
CATALOGUES = ["course_lib/i18n/zh.json", "course_lib/key/zh.json"]
DECIDED = "## Decided terms"
CJK = re.compile(r"[\u3400-\u9fff]")
CODE = re.compile(r"```.*?```|`[^`\n]*`|\{[^{}\n]*\}|https?://\S+", re.S)


def decided_terms(markdown: str) -> list:
    """(English, Chinese, [rejected]) rows of the glossary's table of decided terms."""
    section = markdown.split(DECIDED, 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cols) == 3 and cols[0] not in ("English", "---"):
            rows.append((cols[0], cols[1], [v for v in re.split(r"[、,]\s*", cols[2]) if v]))
    return rows


TERMS = decided_terms(GLOSSARY.read_text(encoding="utf-8"))


def prose(text: str) -> str:
    """A text without its code, placeholders and links."""
    return CODE.sub(" ", text)


def english_word(term: str):
    return re.compile(r"(?<![A-Za-z_-])" + re.escape(term) + r"(?:e?s)?(?![A-Za-z_-])", re.I)


def pairs() -> list:
    """(where, English text, Chinese text) of every translated markdown cell and message."""
    found = []
    for path in NOTEBOOKS:
        en = json.loads(path.read_text(encoding="utf-8"))["cells"]
        zh = json.loads((ROOT / "notebooks" / "zh" / path.name).read_text(encoding="utf-8"))
        for e, z in zip(en, zh["cells"]):
            if e["cell_type"] == "markdown":
                where = f"notebooks/zh/{path.name} cell {z['id']}"
                found.append((where, "".join(e["source"]), "".join(z["source"])))
    for name in CATALOGUES:
        catalogue = json.loads((ROOT / name).read_text(encoding="utf-8"))
        found += [(f"{name} {k[:50]!r}", k, v) for k, v in catalogue.items() if CJK.search(v)]
    return found


PAIRS = pairs()


def test_the_glossary_has_its_table_of_decided_terms():
    assert len(TERMS) >= 8 and all(en and zh for en, zh, _ in TERMS), TERMS


def test_the_glossary_rows_agree_with_the_decided_table():
    text = GLOSSARY.read_text(encoding="utf-8").split(DECIDED, 1)[0]
    stale = [bad for _, _, rejected in TERMS for bad in rejected if bad in text]
    assert not stale, f"docs/zh/glossary.md's main table still gives rejected terms: {stale}"


@pytest.mark.parametrize("english, chinese, rejected", TERMS, ids=[t[0] for t in TERMS])
def test_chinese_text_never_uses_a_rejected_variant(english, chinese, rejected):
    bad = [
        f"{where}: {variant!r} (the glossary says {chinese} for {english!r})"
        for where, _, zh in PAIRS
        for variant in rejected
        if variant in prose(zh)
    ]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("english, chinese, rejected", TERMS, ids=[t[0] for t in TERMS])
def test_chinese_text_says_the_chinese_term_not_the_english_one(english, chinese, rejected):
    if chinese.lower() == english.lower():
        pytest.skip(f"{english!r} stays English")
    word, glossed = english_word(english), re.compile(re.escape(chinese) + r"」?（[^）]*）")
    left = [
        f"{where}: English {english!r} left in the Chinese text (say {chinese})"
        for where, _, zh in PAIRS
        if word.search(glossed.sub(chinese, prose(zh)))
    ]
    missing = [
        f"{where}: its English says {english!r}, the Chinese lacks {chinese}"
        for where, en, zh in PAIRS
        if word.search(prose(en)) and chinese not in zh
    ]
    assert not left + missing, "\n".join(left + missing)
