"""Figures in the Chinese edition: Chinese labels only where a font can draw them."""

from unittest import mock

import pytest

from course_lib.i18n import plots, use_language

TITLE = "Loss per epoch"


@pytest.fixture
def chinese():
    use_language("zh")
    yield
    use_language("en")


@pytest.fixture
def catalogue_has_title():
    with mock.patch.object(plots, "tr", lambda t: "每轮的损失" if t == TITLE else t):
        yield


def test_english_stays_english(catalogue_has_title):
    use_language("en")
    assert plots.plot_text(TITLE) == TITLE


def test_chinese_with_a_cjk_font_puts_it_first(chinese, catalogue_has_title):
    import matplotlib

    with mock.patch.object(plots, "cjk_font", lambda: "WenQuanYi Zen Hei"):
        assert plots.plot_text(TITLE) == "每轮的损失"
    assert matplotlib.rcParams["font.sans-serif"][0] == "WenQuanYi Zen Hei"
    assert matplotlib.rcParams["axes.unicode_minus"] is False


def test_chinese_without_a_font_keeps_english_and_says_why(chinese, catalogue_has_title):
    plots._say_no_font.cache_clear()
    with mock.patch.object(plots, "cjk_font", lambda: None), pytest.warns(UserWarning) as said:
        assert plots.plot_text(TITLE) == TITLE
    assert "fonts-noto-cjk" in str(said[0].message)


def test_the_no_font_message_is_translated(chinese):
    from course_lib.i18n import tr

    assert tr(plots.NO_FONT) != plots.NO_FONT


def test_a_font_installed_after_matplotlibs_cache_is_found(tmp_path):
    """matplotlib caches the system's font list; a CJK font installed later must still be used."""
    from types import SimpleNamespace

    added = []
    font = SimpleNamespace(name="WenQuanYi Zen Hei", fname=str(tmp_path / "wqy-zenhei.ttc"))
    manager = SimpleNamespace(
        ttflist=[SimpleNamespace(name="DejaVu Sans", fname="/fonts/DejaVuSans.ttf")],
        addfont=lambda path: (added.append(path), manager.ttflist.append(font)),
    )
    with (
        mock.patch("matplotlib.font_manager.fontManager", manager),
        mock.patch("matplotlib.font_manager.findSystemFonts", lambda: [font.fname]),
    ):
        plots.cjk_font.cache_clear()
        try:
            assert plots.cjk_font() == "WenQuanYi Zen Hei"
        finally:
            plots.cjk_font.cache_clear()
    assert added == [font.fname]
