"""The course's language: English (the default) or Chinese, one switch for everything it says.

The language is, in order: what `use_language()` set in this process, else the environment
variable ``COURSE_LANG`` (``en`` or ``zh``), else English. A Chinese notebook turns Chinese on in
its first cell with ``import course_lib.zh  # noqa: F401``. `tr(text)` gives a message in the
current language (the catalogue lives in ``catalogue.py``); the notebooks' two editions are paired
and kept in step by ``editions.py`` (``python -m course_lib.i18n sync|check``).
"""

import os
import warnings

LANGUAGES = ("en", "zh")
ENV_VAR = "COURSE_LANG"
_chosen = None  # set by use_language(); None: follow the environment


def _checked(lang: str, where: str) -> str:
    if lang not in LANGUAGES:
        raise ValueError(
            f"{where}: unknown language {lang!r}; choose one of {', '.join(LANGUAGES)}"
        )
    return lang


def _from_environment() -> str:
    """$COURSE_LANG read as a language: 'zh', 'zh_CN', 'zh-TW.UTF-8' -> 'zh'; unset -> 'en'."""
    value = os.environ.get(ENV_VAR, "").strip()
    lang = value.lower().replace("-", "_").split("_")[0].split(".")[0]
    if not value or lang in LANGUAGES:
        return lang or "en"
    if value not in _warned:
        _warned.add(value)
        warnings.warn(
            f"{ENV_VAR}={value!r} is not a language of the course ({', '.join(LANGUAGES)}); "
            f"using English",
            stacklevel=3,
        )
    return "en"


_warned = set()


def language() -> str:
    """The current language: use_language()'s choice, else $COURSE_LANG, else 'en'."""
    return _chosen if _chosen is not None else _from_environment()


def use_language(lang: str) -> None:
    """Set the language of everything the course says in this process ('en' or 'zh')."""
    global _chosen
    _chosen = _checked(lang, "use_language")


def tr(text: str) -> str:
    """`text` in the current language: its entry in the catalogue (catalogue.py), else itself."""
    from .catalogue import tr as translated

    return translated(text)


__all__ = ["LANGUAGES", "ENV_VAR", "language", "use_language", "tr"]
