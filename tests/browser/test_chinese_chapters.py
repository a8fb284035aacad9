"""The Chinese chapters (notebooks/zh/) as a learner sees them in JupyterLab: each runs with no
error, its widgets and plots are drawn, and its Chinese text renders as characters, not boxes.

The English suite's tests run on each Chinese chapter, the learner's click-through included: the
steps of chapters.py are said in Chinese through the course's catalogue (speech.py), so a Chinese
learner checks an exercise wrong then right, opens every hint, answers the quizzes and reads each
verdict in Chinese.
Screenshots: test-artifacts/browser/zh/. CI installs a CJK font (Debian's fonts-wqy-zenhei).
"""

import pytest

from support import ZH_NOTEBOOKS

from .conftest import opened_chapter
from .test_chapters_in_browser import (  # collected here too, on the Chinese pages  # noqa: F401
    test_every_plot_rendered_as_image,
    test_every_widget_rendered,
    test_exercise_wrong_then_right,
    test_hints_come_one_at_a_time_and_stay,
    test_main_widgets_respond,
    test_no_cell_error_output,
    test_no_widget_render_error,
    test_quiz_options_do_not_overlap,
    test_wrong_quiz_answer_says_why_without_naming_the_right_option,
)

pytestmark = pytest.mark.browser

# Two different characters drawn in the page's own font: with a CJK font they differ and have
# ink; without one, both are the same empty box (tofu), or nothing at all.
JS_GLYPHS = """(chars) => {
  const el = document.querySelector('.jp-RenderedMarkdown h1, .jp-RenderedMarkdown h2');
  const font = getComputedStyle(el).fontFamily;
  const draw = (ch) => {
    const c = document.createElement('canvas'); c.width = 48; c.height = 48;
    const g = c.getContext('2d'); g.font = '40px ' + font; g.fillStyle = '#000';
    g.fillText(ch, 2, 40);
    const d = g.getImageData(0, 0, 48, 48).data;
    let bits = '', ink = 0;
    for (let i = 3; i < d.length; i += 4) { bits += d[i] > 127 ? '1' : '0'; ink += d[i] > 127; }
    return {bits, ink};
  };
  const shapes = chars.map(draw);
  return {font, text: el.textContent, ink: shapes.map(s => s.ink),
          distinct: new Set(shapes.map(s => s.bits)).size};
}"""
CHARS = ["显", "存", "设", "备"]


@pytest.fixture(scope="module", params=ZH_NOTEBOOKS, ids=[f"zh-{p.stem}" for p in ZH_NOTEBOOKS])
def chapter_page(request, lab, tab, artifacts):
    """One Chinese chapter opened from notebooks/zh/, all cells run, widgets rendered."""
    from .chapters import CHAPTERS, BrowserSpec

    spec = CHAPTERS.get(request.param.stem, BrowserSpec())
    shots = artifacts / "zh"
    shots.mkdir(exist_ok=True)
    yield from opened_chapter(lab, tab, f"zh/{request.param.name}", shots, spec, lang="zh")


def test_chinese_text_renders_as_characters(chapter_page):
    """A heading's font draws Chinese characters: distinct shapes with ink, not boxes."""
    found = chapter_page.page.evaluate(JS_GLYPHS, CHARS)
    assert any("\u4e00" <= ch <= "\u9fff" for ch in found["text"]), (
        f"[{chapter_page.name}] the first heading is not Chinese: {found['text']!r}"
    )
    assert found["distinct"] == len(CHARS) and min(found["ink"]) > 20, (
        f"[{chapter_page.name}] Chinese characters render as boxes or blanks in the page's font "
        f"({found['font']}): install a CJK font (Debian: apt-get install fonts-wqy-zenhei); "
        f"ink per character {found['ink']}, {found['distinct']} distinct shapes of {len(CHARS)}; "
        f"screenshot: {chapter_page.screenshot('FAILED-glyphs')}"
    )


def test_the_kernel_speaks_chinese(chapter_page):
    """The language line turned Chinese on: what course_lib printed in the page is Chinese."""
    text = chapter_page.page.evaluate(
        "() => Array.from(document.querySelectorAll('.jp-OutputArea-output'))"
        ".map(e => e.innerText).join('\\n')"
    )
    chinese = sum("\u4e00" <= ch <= "\u9fff" for ch in text)
    assert chinese > 50, (
        f"[{chapter_page.name}] the outputs hold {chinese} Chinese characters: "
        "course_lib did not switch to Chinese"
    )
