"""A notebook heading in the other edition: where the explainer's links point in Chinese.

Course_lib names a teaching section by its English heading (``"### 4a. Saved on a GPU, ..."``).
The Chinese twin (``notebooks/zh/``, same cell ids, same heading numbers) has that heading in
Chinese; `heading_in` reads it from there, so a link always lands on a heading that exists.
"""

import json
import re
from functools import cache
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
_HEADING = re.compile(r"^(#{1,6})\s+(\d+[a-z]?(?:\.\d+)*\.?)?")


def notebook_path(name: str, lang: str) -> str:
    """The notebook `name` (e.g. "04_common_errors") of the edition `lang`, relative to the
    checkout."""
    return f"notebooks/{name}.ipynb" if lang == "en" else f"notebooks/{lang}/{name}.ipynb"


@cache
def _cells(path: Path) -> dict:
    """Cell id -> source lines of a notebook; {} when it cannot be read."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    out = {}
    for cell in nb.get("cells", []):
        text = cell.get("source", "")
        out[cell.get("id")] = ("".join(text) if isinstance(text, list) else text).splitlines()
    return out


def _same_heading(lines: list, english: str):
    """The line of `lines` that is the heading `english` is in its edition: same level and
    number."""
    want = _HEADING.match(english)
    for line in lines:
        found = _HEADING.match(line)
        if found and want and found.groups() == want.groups():
            return line
    return None


def heading_in(notebook: str, heading: str, lang: str, folder: Path = NOTEBOOKS) -> str:
    """`heading` of `notebook` as the edition `lang` writes it; the catalogue's translation when
    that
    edition is not there (a student bundle of the other edition), else the English heading."""
    if lang == "en" or not heading:
        return heading
    english, twin = (
        _cells(folder / f"{notebook}.ipynb"),
        _cells(folder / lang / f"{notebook}.ipynb"),
    )
    for cell_id, lines in english.items():
        if heading in lines and cell_id in twin:
            found = _same_heading(twin[cell_id], heading)
            if found:
                return found
    numbered = _HEADING.match(heading)
    if not english and numbered and numbered.group(2):  # only this edition at hand: the same number
        found = [line for lines in twin.values() if (line := _same_heading(lines, heading))]
        if len(found) == 1:
            return found[0]
    from .catalogue import translate

    return translate(heading, lang)


__all__ = ["heading_in", "notebook_path"]
