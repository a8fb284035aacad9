"""The course's language: English by default, Chinese on request (issue 23)."""
import os

LANGUAGES = ("en", "zh")
_chosen = None


def language() -> str:
    """The current language: set by use_language(), else $COURSE_LANG, else "en"."""
    if _chosen:
        return _chosen
    env = os.environ.get("COURSE_LANG", "").strip().lower()
    return env if env in LANGUAGES else "en"


def use_language(lang: str) -> None:
    """Set the language for this process."""
    global _chosen
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; choose one of {', '.join(LANGUAGES)}")
    _chosen = lang


def tr(text: str) -> str:
    """The message in the current language (identity until the catalogue lands)."""
    return text
