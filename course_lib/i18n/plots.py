"""Text in matplotlib figures: Chinese where a CJK font can draw it, else the English.

matplotlib's default font (DejaVu Sans) has no Chinese glyphs: a translated title would show
empty boxes and a "Glyph ... missing" warning per character. `plot_text(text)` translates like
`tr()` when the language is Chinese and an installed font covers Chinese (it then puts that font
first in matplotlib's sans-serif list, once); without one it keeps the English and says so once.
"""

import logging
import warnings
from functools import cache

from . import language, tr

# Fonts that draw Simplified Chinese, the commonest first (Linux, macOS, Windows).
CJK_FONTS = (
    "Noto Sans CJK SC",
    "Noto Sans CJK JP",
    "Source Han Sans SC",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "Droid Sans Fallback",
    "PingFang SC",
    "Heiti SC",
    "Hiragino Sans GB",
    "Microsoft YaHei",
    "SimHei",
    "Arial Unicode MS",
)
NO_FONT = (
    "No installed font draws Chinese, so the figures keep their English labels "
    "(install one, e.g. Debian's fonts-noto-cjk or fonts-wqy-zenhei, then restart the kernel)."
)


@cache
def cjk_font() -> str | None:
    """The first installed font of CJK_FONTS that matplotlib knows, or None; a font installed
    after matplotlib cached its font list is added to the list first."""
    from matplotlib import font_manager

    manager = font_manager.fontManager
    found = _first_cjk(manager)
    if found is None:
        _add_fonts_installed_since(manager, font_manager.findSystemFonts())
        found = _first_cjk(manager)
    return found


def _first_cjk(manager) -> str | None:
    known = {f.name for f in manager.ttflist}
    return next((name for name in CJK_FONTS if name in known), None)


def _add_fonts_installed_since(manager, paths) -> None:
    """matplotlib reads the system's fonts once and caches the list: add the files it lacks."""
    cached = {f.fname for f in manager.ttflist}
    for path in paths:
        if path not in cached:
            try:
                manager.addfont(path)
            except (OSError, RuntimeError, ValueError):  # a file FreeType cannot read
                pass


@cache
def _use_font(font: str) -> None:
    """Put `font` first in matplotlib's sans-serif list, and keep the ASCII minus sign."""
    import matplotlib

    rc = matplotlib.rcParams
    rc["font.sans-serif"] = [font, *[f for f in rc["font.sans-serif"] if f != font]]
    rc["axes.unicode_minus"] = False  # CJK fonts often lack U+2212
    # matplotlib logs "findfont: Failed to find font weight normal for <font>, now using 500." under
    # a figure drawn with a CJK font that has only one weight (WenQuanYi Zen Hei is "medium")
    logging.getLogger("matplotlib.font_manager").addFilter(
        lambda record: not str(record.msg).startswith("findfont: Failed to find font weight")
    )


@cache
def _say_no_font() -> None:
    warnings.warn(tr(NO_FONT), stacklevel=3)


def plot_text(text: str) -> str:
    """`text` for a figure's title, axis label, legend or annotation, in the course's language."""
    translated = tr(text)  # also recorded by the message collector, whatever the font
    if language() == "en" or translated == text:
        return text
    font = cjk_font()
    if font is None:
        _say_no_font()
        return text
    _use_font(font)
    return translated


__all__ = ["CJK_FONTS", "cjk_font", "plot_text"]
