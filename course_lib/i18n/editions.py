"""The two editions of the notebooks, kept in step: ``notebooks/NN_topic.ipynb`` (English) and its
Chinese twin ``notebooks/zh/NN_topic.ipynb``.

A twin has the English notebook's cells, in the same order, with the same types and ids. Its code
cells are the English code (the first one starts with `LANGUAGE_LINE` as well); only their comments
may differ (translated): the editions compare code without its comments. Its markdown
cells are translations, each recording in its metadata the fingerprint of the English cell it
translates (``"translation_of": {"sha": ...}``). `check` lists every way a twin has fallen behind,
naming the notebook, the cell and what to do; `sync` copies what can be copied (code, structure,
metadata) and stamps a fingerprint only on a translation someone has updated and accepted.
"""

import hashlib
import io
import json
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

LANGUAGE_LINE = "import course_lib.zh  # noqa: F401"
EDITION = "zh"
NOTEBOOK_GLOB = "[0-9][0-9]_*.ipynb"
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
HEADING = re.compile(r"^(#{1,6})\s+(\d+[a-z]?(?:\.\d+)*\.?)?")
FENCE = re.compile(r"^\s*```")
CLI = "python -m course_lib.i18n"


def checkout_root() -> Path:
    """The folder holding course_lib/ and notebooks/ (this checkout)."""
    return Path(__file__).resolve().parents[2]


def source(cell: dict) -> str:
    """A cell's source as one string (nbformat keeps it as a list of lines or a string)."""
    text = cell.get("source", "")
    return "".join(text) if isinstance(text, list) else text


def fingerprint(text: str) -> str:
    """The first 12 hex digits of the SHA-256 of a cell's source."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def is_translation(text: str, english: str) -> bool:
    """True when `text` is not the English cell copied: it differs and holds more Chinese than it
    (English cells quote the Chinese articles, so some Chinese alone proves nothing)."""
    return text.strip() != english.strip() and len(CJK.findall(text)) > len(CJK.findall(english))


def recorded_fingerprint(cell: dict):
    """The fingerprint a Chinese markdown cell records of its English cell, or None."""
    return ((cell.get("metadata") or {}).get("translation_of") or {}).get("sha")


def english_notebooks(root: Path) -> list:
    """The English edition: notebooks/NN_topic.ipynb, in order."""
    return sorted((Path(root) / "notebooks").glob(NOTEBOOK_GLOB))


def chinese_notebooks(root: Path) -> list:
    """The Chinese edition: notebooks/zh/NN_topic.ipynb, in order."""
    return sorted((Path(root) / "notebooks" / EDITION).glob(NOTEBOOK_GLOB))


def twin(english: Path) -> Path:
    """notebooks/zh/NAME for notebooks/NAME."""
    return english.parent / EDITION / english.name


def read(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def write(path: Path, nb: dict) -> None:
    """Write a notebook as the repository keeps them: indent 1, UTF-8 as is, a final newline."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def as_lines(text: str) -> list:
    """A source string in nbformat's list-of-lines form."""
    return text.splitlines(keepends=True)


def with_language_line(code: str) -> str:
    return LANGUAGE_LINE + "\n" + code


def without_language_line(code: str) -> str:
    """A first Chinese code cell's code without its language line (as it must equal English)."""
    first, _, rest = code.partition("\n")
    return rest if first == LANGUAGE_LINE else code


def _comment_spans(code: str) -> list:
    """(line index, column) where each comment of `code` starts, by Python's tokenizer; a cell
    the tokenizer cannot read (IPython magics, `!` lines) is read line by line instead."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return [(i, col) for i, line in enumerate(code.split("\n")) if (col := _hash_at(line)) >= 0]
    return [(t.start[0] - 1, t.start[1]) for t in tokens if t.type == tokenize.COMMENT]


def _hash_at(line: str) -> int:
    """The column of the `#` that starts a comment on one line, outside quotes; -1 if none."""
    quote = None
    for col, char in enumerate(line):
        if quote is not None:
            quote = None if char == quote and line[col - 1] != "\\" else quote
        elif char == "#":
            return col
        elif char in "'\"":
            quote = char
    return -1


def comments(code: str) -> list:
    """The comments of `code`, each from its `#` to the end of its line."""
    lines = code.split("\n")
    return [lines[i][col:] for i, col in _comment_spans(code)]


def without_comments(code: str) -> str:
    """`code` with its comments cut out: lines that held only a comment go, the others lose their
    comment and the spaces before it; everything else is kept exactly."""
    lines, cut = code.split("\n"), dict(_comment_spans(code))
    kept = [
        line[: cut[i]].rstrip() if i in cut else line
        for i, line in enumerate(lines)
        if not (i in cut and not line[: cut[i]].strip())
    ]
    return "\n".join(kept)


def same_code(code: str, english: str) -> bool:
    """Whether a Chinese cell's code is the English code, comments aside (translated or not)."""
    return without_comments(code) == without_comments(english)


def heading_lines(markdown: str) -> list:
    """The heading lines of a markdown text, outside fenced code blocks."""
    found, fenced = [], False
    for line in markdown.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and HEADING.match(line):
            found.append(line.strip())
    return found


def heading_outline(markdown: str) -> list:
    """Each heading as (level, number): what a translation keeps, so references stay true."""
    return [
        (len(m.group(1)), (m.group(2) or "").rstrip("."))
        for m in map(HEADING.match, heading_lines(markdown))
    ]


def zh_notebook_metadata(english_metadata: dict) -> dict:
    """English's notebook metadata plus {"course": {"language": "zh"}}."""
    metadata = json.loads(json.dumps(english_metadata))
    metadata.setdefault("course", {})["language"] = EDITION
    return metadata


def first_code_index(cells: list):
    return next((i for i, c in enumerate(cells) if c.get("cell_type") == "code"), None)


# ---------------------------------------------------------------- check
@dataclass(frozen=True)
class Drift:
    """One way a Chinese notebook is behind its English one, and what to do about it."""

    notebook: str  # notebooks/zh/NN_topic.ipynb, relative to the checkout
    cell: str  # the cell's id, or "" for the notebook as a whole
    kind: str  # "markdown", "code" or "notebook"
    problem: str
    todo: str

    def __str__(self):
        where = f"{self.notebook} cell {self.cell} ({self.kind})" if self.cell else self.notebook
        return f"{where}: {self.problem}; {self.todo}"


def _accept_arg(zh_rel: str, cell_id: str) -> str:
    return f"{Path(zh_rel).stem}:{cell_id}"


def check_cells(en: dict, zh: dict, en_rel: str, zh_rel: str) -> list:
    """Every drift of one Chinese notebook from its English one (both loaded)."""
    sync = f"run `{CLI} sync`"
    drifts = []
    en_cells, zh_cells = en.get("cells", []), zh.get("cells", [])
    en_shape = [(c.get("id"), c.get("cell_type")) for c in en_cells]
    zh_shape = [(c.get("id"), c.get("cell_type")) for c in zh_cells]
    if zh.get("metadata") != zh_notebook_metadata(en.get("metadata", {})):
        drifts.append(
            Drift(
                zh_rel,
                "",
                "notebook",
                f'its metadata is not {en_rel}\'s plus "course": {{"language": "zh"}}',
                sync,
            )
        )
    if en_shape != zh_shape:
        drifts.append(
            Drift(
                zh_rel,
                "",
                "notebook",
                _shape_difference(en_shape, zh_shape, en_rel),
                f"{sync} to give it the English cells' order, types and ids "
                "(translations of cells that stay are kept)",
            )
        )
        return drifts + _dirty(zh_cells, zh_rel)
    first_code = first_code_index(en_cells)
    for i, (e, z) in enumerate(zip(en_cells, zh_cells)):
        kind = e.get("cell_type")
        if kind == "markdown":
            drifts += _check_markdown(e, z, en_rel, zh_rel)
        else:
            drifts += _check_code(e, z, i == first_code, en_rel, zh_rel)
    return drifts + _dirty(zh_cells, zh_rel)


def _shape_difference(en_shape: list, zh_shape: list, en_rel: str) -> str:
    en_ids, zh_ids = [i for i, _ in en_shape], [i for i, _ in zh_shape]
    parts = [f"its cells are not {en_rel}'s ({len(zh_shape)} cells, English {len(en_shape)})"]
    missing = [i for i in en_ids if i not in zh_ids]
    extra = [i for i in zh_ids if i not in en_ids]
    if missing:
        parts.append("English cells it lacks: " + ", ".join(map(str, missing)))
    if extra:
        parts.append("cells English no longer has: " + ", ".join(map(str, extra)))
    retyped = [
        f"{i} ({zt}, English {et})"
        for (i, zt) in zh_shape
        for (j, et) in en_shape
        if i == j and zt != et
    ]
    if retyped:
        parts.append("cells of another type: " + ", ".join(retyped))
    if not (missing or extra or retyped):
        at = next(k for k, (a, b) in enumerate(zip(en_ids, zh_ids)) if a != b)
        parts.append(
            f"the order differs from position {at} (English {en_ids[at]}, Chinese {zh_ids[at]})"
        )
    return "; ".join(parts)


def _check_markdown(e: dict, z: dict, en_rel: str, zh_rel: str) -> list:
    cid, text, english = z.get("id"), source(z), source(e)
    accept = f"`{CLI} sync --accept {_accept_arg(zh_rel, cid)}`"
    sha = recorded_fingerprint(z)
    if not is_translation(text, english):
        return [
            Drift(
                zh_rel,
                cid,
                "markdown",
                "is not translated yet (it is the English text)",
                f"translate {en_rel} cell {cid} into it, then run {accept}",
            )
        ]
    if sha is None:
        return [
            Drift(
                zh_rel,
                cid,
                "markdown",
                "records no fingerprint of the English cell it translates",
                f"check it against {en_rel} cell {cid}, then run {accept}",
            )
        ]
    drifts = []
    if sha != fingerprint(english):
        drifts.append(
            Drift(
                zh_rel,
                cid,
                "markdown",
                f"English changed since it was translated (fingerprint {sha}, English now "
                f"{fingerprint(english)})",
                f"update the translation from {en_rel} cell {cid} (`git log -p {en_rel}` shows "
                f"what changed), then run {accept}",
            )
        )
    if heading_outline(text) != heading_outline(english):
        drifts.append(
            Drift(
                zh_rel,
                cid,
                "markdown",
                f"its headings {heading_outline(text)} are not the English "
                f"{heading_outline(english)} (level and number)",
                "keep each heading's level and number; section references rely on them",
            )
        )
    return drifts


def _check_code(e: dict, z: dict, first: bool, en_rel: str, zh_rel: str) -> list:
    cid, code = z.get("id"), source(z)
    sync = f"change code in {en_rel} only, then run `{CLI} sync`"
    if first and not code.startswith(LANGUAGE_LINE + "\n"):
        return [
            Drift(
                zh_rel,
                cid,
                "code",
                f"the first code cell does not start with `{LANGUAGE_LINE}`",
                sync,
            )
        ]
    if not same_code(without_language_line(code) if first else code, source(e)):
        return [
            Drift(
                zh_rel,
                cid,
                "code",
                f"differs from {en_rel} cell {cid} (code is the same in both editions; "
                "only comments may differ)",
                sync,
            )
        ]
    if (z.get("metadata") or {}) != (e.get("metadata") or {}):
        return [
            Drift(zh_rel, cid, "code", f"its metadata (tags) differ from {en_rel} cell {cid}", sync)
        ]
    return []


def _dirty(cells: list, zh_rel: str) -> list:
    return [
        Drift(
            zh_rel,
            c.get("id"),
            "code",
            "has outputs or an execution count",
            f"run `{CLI} sync` (it clears them) or clear them in JupyterLab",
        )
        for c in cells
        if c.get("cell_type") == "code"
        and (c.get("outputs") or c.get("execution_count") is not None)
    ]


def check(root: Path = None) -> list:
    """Every drift of the Chinese edition from the English one, in the checkout at `root`."""
    root = Path(root or checkout_root())
    drifts = []
    english = english_notebooks(root)
    for en_path in english:
        zh_path, en_rel = twin(en_path), en_path.relative_to(root).as_posix()
        zh_rel = zh_path.relative_to(root).as_posix()
        if not zh_path.exists():
            drifts.append(
                Drift(
                    zh_rel,
                    "",
                    "notebook",
                    f"missing: {en_rel} has no Chinese twin",
                    f"run `{CLI} sync` to create it, then translate its markdown cells",
                )
            )
            continue
        drifts += check_cells(read(en_path), read(zh_path), en_rel, zh_rel)
    names = {p.name for p in english}
    for zh_path in chinese_notebooks(root):
        if zh_path.name not in names:
            drifts.append(
                Drift(
                    zh_path.relative_to(root).as_posix(),
                    "",
                    "notebook",
                    "has no English notebook of that name",
                    "rename it after its English notebook, or delete it",
                )
            )
    return drifts


# ---------------------------------------------------------------- sync
def synced(en: dict, zh: dict = None, accept=()) -> dict:
    """The Chinese notebook brought in step with `en`: its structure, code and metadata copied;
    its translations kept (by cell id), translated comments too where the code is the English
    code; fingerprints stamped for the cell ids in `accept` only."""
    old = {c.get("id"): c for c in (zh or {}).get("cells", [])}
    cells, first_code = [], first_code_index(en.get("cells", []))
    for i, e in enumerate(en.get("cells", [])):
        kept = old.get(e.get("id"))
        kept = kept if kept is not None and kept.get("cell_type") == e.get("cell_type") else None
        if e.get("cell_type") == "code":
            code = _kept_code(e, kept, i == first_code)
            cell = {
                **json.loads(json.dumps(e)),
                "execution_count": None,
                "outputs": [],
                "source": as_lines(with_language_line(code) if i == first_code else code),
            }
        elif kept is not None:
            cell = json.loads(json.dumps(kept))
            metadata = {
                **json.loads(json.dumps(e.get("metadata") or {})),
                "translation_of": (kept.get("metadata") or {}).get("translation_of"),
            }
            cell["metadata"] = {k: v for k, v in metadata.items() if v is not None}
        else:  # new in English: its text, to be translated (check says so until it holds Chinese)
            cell = json.loads(json.dumps(e))
        if cell.get("cell_type") == "markdown" and cell.get("id") in accept:
            cell.setdefault("metadata", {})["translation_of"] = {"sha": fingerprint(source(e))}
        cells.append(cell)
    return {**en, "metadata": zh_notebook_metadata(en.get("metadata", {})), "cells": cells}


def _kept_code(e: dict, kept, first: bool) -> str:
    """The Chinese cell's code where it is the English code with translated comments, else the
    English code."""
    code = source(e)
    if kept is None or kept.get("cell_type") != "code":
        return code
    mine = without_language_line(source(kept)) if first else source(kept)
    return mine if same_code(mine, code) else code


def retranslate(en: dict, zh) -> list:
    """Ids of the Chinese code cells whose translated comments `synced` replaces with the English
    code (the English code changed): their comments need translating again."""
    old = {c.get("id"): c for c in (zh or {}).get("cells", [])}
    first_code = first_code_index(en.get("cells", []))
    ids = []
    for i, e in enumerate(en.get("cells", [])):
        kept = old.get(e.get("id"))
        if e.get("cell_type") != "code" or kept is None or kept.get("cell_type") != "code":
            continue
        mine = without_language_line(source(kept)) if i == first_code else source(kept)
        if comments(mine) != comments(source(e)) and not same_code(mine, source(e)):
            ids.append(e.get("id"))
    return ids


def parse_accept(items) -> dict:
    """{notebook stem or number: {cell ids}} from 'NN_topic:ID', 'NN:ID' or
    'notebooks/zh/NN_topic.ipynb:ID'."""
    wanted = {}
    for item in items:
        notebook, sep, cell_id = item.rpartition(":")
        if not sep or not notebook or not cell_id:
            raise ValueError(
                f"--accept {item!r}: write NOTEBOOK:CELL_ID, "
                "e.g. 03_training_template:c04 or 03:c04"
            )
        wanted.setdefault(Path(notebook).stem, set()).add(cell_id)
    return wanted


def _accepted_for(stem: str, wanted: dict) -> set:
    return set().union(
        *(ids for key, ids in wanted.items() if key == stem or stem.startswith(key + "_"))
    )


def _selected(english: list, only) -> list:
    """The English notebooks named in `only` (stems or numbers: '03_training_template', '03');
    all if empty."""
    if not only:
        return english
    wanted = {Path(n).stem for n in only}
    unknown = [
        n for n in wanted if not any(p.stem == n or p.stem.startswith(n + "_") for p in english)
    ]
    if unknown:
        raise ValueError(
            f"no English notebook {', '.join(sorted(unknown))} "
            f"(notebooks: {', '.join(p.stem for p in english)})"
        )
    return [p for p in english if any(p.stem == n or p.stem.startswith(n + "_") for n in wanted)]


def sync(root: Path = None, accept=(), only=()) -> list:
    """Bring every Chinese notebook (or those in `only`) in step with its English one; return what
    changed (lines).

    `accept` ('NN_topic:ID' items) stamps the English cell's current fingerprint on those Chinese
    markdown cells: say so only after updating their translations. A cell that is still the
    English text is never accepted.
    """
    root = Path(root or checkout_root())
    english = _selected(english_notebooks(root), only)
    wanted, changes = parse_accept(accept), []
    _selected(english, list(wanted))  # an --accept for a notebook not synced is refused
    for en_path in english:
        zh_path = twin(en_path)
        en, zh = read(en_path), read(zh_path) if zh_path.exists() else None
        accepted = _accepted_for(en_path.stem, wanted)
        ids = {c.get("id"): c for c in en.get("cells", [])}
        unknown_ids = sorted(
            accepted - {i for i, c in ids.items() if c.get("cell_type") == "markdown"}
        )
        if unknown_ids:
            raise ValueError(
                f"--accept {en_path.stem}: no markdown cell {', '.join(unknown_ids)} "
                f"in {en_path.name}"
            )
        new = synced(en, zh, accept=_translated(en, zh, accepted))
        refused = sorted(accepted - _translated(en, zh, accepted))
        rel = zh_path.relative_to(root).as_posix()
        changes += [
            f"{rel} cell {i}: the English code changed, its code is copied with the English "
            "comments: translate its comments again"
            for i in retranslate(en, zh)
        ]
        changes += [
            f"{rel} cell {i}: not accepted, it is not translated yet (translate it first)"
            for i in refused
        ]
        if new != zh:
            write(zh_path, new)
            changes.append(
                f"{rel}: "
                + (
                    "created from the English; translate its markdown cells"
                    if zh is None
                    else "brought in step with the English"
                )
            )
        changes += [
            f"{rel} cell {i}: accepted as the translation of the English cell now"
            for i in sorted(accepted - set(refused))
        ]
    return changes


def _translated(en: dict, zh, ids: set) -> set:
    """Those of `ids` whose Chinese cell holds a translation (not the English text)."""
    english = {c.get("id"): source(c) for c in en.get("cells", [])}
    cells = {c.get("id"): c for c in (zh or {}).get("cells", [])}
    return {i for i in ids if i in cells and is_translation(source(cells[i]), english.get(i, ""))}


def heading_pairs(stem: str, root: Path = None) -> dict:
    """{English heading line: Chinese heading line} of one chapter, paired by cell and position."""
    root = Path(root or checkout_root())
    en_path = Path(root) / "notebooks" / f"{stem}.ipynb"
    en, zh = read(en_path), read(twin(en_path))
    zh_cells = {c.get("id"): c for c in zh.get("cells", [])}
    pairs = {}
    for e in en.get("cells", []):
        z = zh_cells.get(e.get("id"))
        if e.get("cell_type") == "markdown" and z is not None:
            en_lines, zh_lines = heading_lines(source(e)), heading_lines(source(z))
            pairs.update(zip(en_lines, zh_lines) if len(en_lines) == len(zh_lines) else ())
    return pairs
