"""What a learner does to a widget, and what they then read on the screen: the steps of chapters.py.

Each step acts inside one cell's output (the widget's cell) and returns None when it went as
expected, or a sentence saying what did not. `step.said(say)` is the same step on a page of
another language: its captions, options and expected text said by `say` (speech.py); a step
without text to say (RunCell, ExpectImages, ExpectFits) is the same in every language.
"""

import re
import time
import warnings
from dataclasses import dataclass


@dataclass(frozen=True)
class Select:
    """Pick `option` in the dropdown labelled `label`."""

    label: str
    option: str

    def __call__(self, page, index):
        box = page.cell_locator(index).locator(".widget-dropdown", has_text=self.label).first
        box.locator("select").select_option(label=self.option)

    def __str__(self):
        return f"select {self.option!r} in the {self.label!r} dropdown"

    def said(self, say):
        return Either(Select(say(self.label), say(self.option)), self)

    def present(self, page, index):
        box = page.cell_locator(index).locator(".widget-dropdown", has_text=self.label)
        options = "s => Array.from(s.options).map(o => o.label.replace(/\\s/g, ' '))"  # nbsp
        return box.count() > 0 and self.option in box.first.locator("select").evaluate(options)


@dataclass(frozen=True)
class Choose:
    """Click the radio button or checkbox whose text starts with `text`."""

    text: str

    def __call__(self, page, index):
        page.cell_locator(index).locator("label", has_text=self.text).first.click()

    def __str__(self):
        return f"choose {self.text!r}"

    def said(self, say):
        return Either(Choose(say.choice(self.text)), self)

    def present(self, page, index):
        return page.cell_locator(index).locator("label", has_text=self.text).count() > 0


@dataclass(frozen=True)
class Toggle:
    """In the toggle-button group labelled `label`,
    press the button whose caption contains `option`."""

    label: str
    option: str

    def __call__(self, page, index):
        group = (
            page.cell_locator(index).locator(".widget-toggle-buttons", has_text=self.label).first
        )
        group.get_by_role("button", name=self.option).first.click()

    def __str__(self):
        return f"press {self.option!r} in {self.label!r}"

    def said(self, say):
        return Either(Toggle(say(self.label), say.choice(self.option)), self)

    def present(self, page, index):
        group = page.cell_locator(index).locator(".widget-toggle-buttons", has_text=self.label)
        return group.count() > 0 and group.first.get_by_role("button", name=self.option).count() > 0


@dataclass(frozen=True)
class Click:
    """Press the button whose caption is `caption`."""

    caption: str

    def __call__(self, page, index):
        page.cell_locator(index).get_by_role("button", name=self.caption, exact=True).first.click()

    def __str__(self):
        return f"press {self.caption!r}"

    def said(self, say):
        return Either(Click(say(self.caption)), self)

    def present(self, page, index):
        button = page.cell_locator(index).get_by_role("button", name=self.caption, exact=True)
        return button.count() > 0


@dataclass(frozen=True)
class RunCell:
    """Run the widget's cell again (click into it,
    Shift+Enter), as a learner re-running a training cell."""

    timeout: float = 180

    def __call__(self, page, index):
        page.run_cell(index, self.timeout)

    def __str__(self):
        return "run the cell again (Shift+Enter)"


@dataclass(frozen=True)
class Expect:
    """The widget's output must come to show text matching `pattern` (a regex)."""

    pattern: str
    timeout: float = 30
    zh: str = ""  # the Chinese page's pattern, where the catalogue cannot say this one (a value
    # inside a template's sentence, tqdm's bar): checked alone, no English fallback

    def __call__(self, page, index):
        if page.wait_for_text(index, self.pattern, self.timeout) is None:
            return f"/{self.pattern}/ did not appear within {self.timeout:g} s"

    def __str__(self):
        return f"read /{self.pattern}/"

    def said(self, say):
        if self.zh and say.lang == "zh":
            return Expect(self.zh, self.timeout)
        return Either(Expect(say.pattern(self.pattern), self.timeout), self)


@dataclass(frozen=True)
class ExpectNot:
    """The widget's output must NOT show text matching
    `pattern` (checked once, after the step before)."""

    pattern: str

    def __call__(self, page, index):
        found = re.search(self.pattern, page.output_text(index))
        if found:
            return f"/{self.pattern}/ is still on the page ({found.group(0)!r})"

    def __str__(self):
        return f"no longer read /{self.pattern}/"

    def said(self, say):
        said = say.pattern(self.pattern)
        return self if said == self.pattern else ExpectNot(f"(?:{said})|(?:{self.pattern})")


@dataclass(frozen=True)
class ExpectImages:
    """At least `count` images (plots) must be loaded in the widget's output."""

    count: int = 1
    timeout: float = 30

    def __call__(self, page, index):
        deadline, found = time.monotonic() + self.timeout, 0
        while time.monotonic() < deadline:
            found = (
                page.cell_locator(index)
                .locator(".jp-Cell-outputWrapper img")
                .evaluate_all("imgs => imgs.filter(i => i.complete && i.naturalWidth > 0).length")
            )
            if found >= self.count:
                return None
            time.sleep(0.3)
        return f"{found} loaded image(s), expected at least {self.count}, after {self.timeout:g} s"

    def __str__(self):
        return f"see at least {self.count} plot image(s)"


@dataclass(frozen=True)
class ExpectFits:
    """In a browser window `window_px` wide, the widget fits its output area (no part of it sticks
    out to the right) and every description label in it shows its whole text (none cut short)."""

    window_px: int = 1000

    def __call__(self, page, index):
        size = page.page.viewport_size
        page.page.set_viewport_size({"width": self.window_px, "height": size["height"]})
        try:
            time.sleep(0.5)  # let JupyterLab lay the notebook out again
            report = (
                page.cell_locator(index)
                .locator(".jp-OutputArea-output .widget-vbox")
                .first.evaluate(
                    """root => {
                    const area = root.closest('.jp-OutputArea-output').getBoundingClientRect();
                    const out = [root, ...root.querySelectorAll('*')].filter(
                        e => e.getBoundingClientRect().width > 0
                          && e.getBoundingClientRect().right > area.right + 1);
                    const cut = [...root.querySelectorAll('.widget-label')].filter(
                        l => l.scrollWidth > l.clientWidth + 1);
                    const named = e => (e.className || e.tagName).toString().slice(0, 60);
                    return {out: out.slice(0, 3).map(named),
                            cut: cut.map(l => l.textContent)};
                }"""
                )
            )
        finally:
            page.page.set_viewport_size(size)
        problems = (
            [f"sticks out of a {self.window_px} px window: {report['out']}"]
            if report["out"]
            else []
        )
        problems += [f"labels cut short: {report['cut']}"] if report["cut"] else []
        return "; ".join(problems) or None

    def __str__(self):
        return f"fit a {self.window_px} px window with every label whole"


class EnglishOnTranslatedPage(UserWarning):
    """A widget of a translated page still shows an English caption or message."""


@dataclass(frozen=True)
class Either:
    """A step said in the page's language; where the page still shows the English of a text that
    has a translation (a widget not yet put through tr()), the English step does, with a warning
    naming it (the leftover-English checks are what fail on it)."""

    said: object
    english: object

    def __call__(self, page, index):
        if str(self.said) == str(self.english):
            return self.said(page, index)
        if isinstance(self.said, Expect):
            both = f"(?:{self.said.pattern})|(?:{self.english.pattern})"
            if Expect(both, self.said.timeout)(page, index) is not None:
                return f"/{self.said.pattern}/ did not appear within {self.said.timeout:g} s"
            if re.search(self.said.pattern, page.output_text(index)):
                return None
        elif self.said.present(page, index) or not self.english.present(page, index):
            return self.said(page, index)
        else:
            self.english(page, index)
        warnings.warn(
            f"[{page.name}] shows English where the catalogue has a translation: {self.english}",
            EnglishOnTranslatedPage,
            stacklevel=2,
        )

    def __str__(self):
        return str(self.said)
