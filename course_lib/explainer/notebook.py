"""The explainer's panel under a failing notebook
cell (every chapter turns it on in its first cell).

It listens to IPython's `post_run_cell` event: IPython has already printed the traceback, untouched;
the panel is an extra output below it, only for errors the course knows. Errors raised on purpose
inside `expect_error` never get here (it catches them), and its own failure (the expected error
did not come) is shown plainly, without a panel.

Warnings get a panel too: `warnings.showwarning` is wrapped so that the warning is printed exactly
as before, and then, for the first warning of each kind the course knows (one kind = one knowledge-
base entry), the panel follows it. Later warnings of that kind are printed without a panel.
A warning no entry knows, but whose wording or torch folder names one of the families, gets that
family's general case, marked as such, once per family (issue 35).
"""

import sys
import warnings

_state = {"last": None, "warned": set(), "showwarning": None}


def last_error():
    """The last exception a cell raised since the panel was turned on, or None."""
    return _state["last"]


def _on_purpose(err: BaseException) -> bool:
    from ..errors import ExpectationFailed

    return isinstance(err, (ExpectationFailed, KeyboardInterrupt, SystemExit))


def _panel_after_cell(result) -> None:
    """post_run_cell callback: show the explanation of the cell's error, if the course knows it."""
    err = getattr(result, "error_in_exec", None)
    if err is None:
        return
    _state["last"] = err
    if _on_purpose(err):
        return
    try:
        from IPython.display import display

        from . import explain_exception

        explanation = explain_exception(err)
        if explanation.known:
            display(explanation)
    except Exception:  # the panel is a courtesy: it must never add an error of its own
        pass


def _panel_after_warning(message, category, filename, lineno, file=None, line=None):
    """warnings.showwarning wrapper: print the warning as always, then its panel, once per kind."""
    _state["showwarning"](message, category, filename, lineno, file, line)
    try:
        from IPython.display import display

        from . import explain_warning

        explanation = explain_warning(message, category, filename, lineno)
        if explanation.known and explanation.entry.id not in _state["warned"]:
            _state["warned"].add(explanation.entry.id)
            (file or sys.stderr).flush()  # the warning's text first, then the panel
            display(explanation)
    except Exception:  # never turn a warning into an error
        pass


def _hook_warnings() -> None:
    if warnings.showwarning is not _panel_after_warning:
        _state["showwarning"] = warnings.showwarning
        warnings.showwarning = _panel_after_warning


def _unhook_warnings() -> None:
    if warnings.showwarning is _panel_after_warning:
        warnings.showwarning = _state["showwarning"]
    _state["warned"].clear()


def _current_shell():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def enable(shell=None) -> bool:
    """Register the panel once with this IPython shell; outside IPython do nothing. True if on."""
    shell = shell or _current_shell()
    if shell is None or not hasattr(shell, "events"):
        return False
    _hook_warnings()
    callbacks = shell.events.callbacks.get("post_run_cell", [])
    if not any(
        getattr(cb, "__qualname__", "") == _panel_after_cell.__qualname__
        and getattr(cb, "__module__", "") == __name__
        for cb in callbacks
    ):
        shell.events.register("post_run_cell", _panel_after_cell)
    return True


def disable(shell=None) -> None:
    """Remove the panel (tests, or a learner who wants plain tracebacks and warnings)."""
    _unhook_warnings()
    shell = shell or _current_shell()
    if shell is None or not hasattr(shell, "events"):
        return
    for cb in list(shell.events.callbacks.get("post_run_cell", [])):
        if (
            getattr(cb, "__qualname__", "") == _panel_after_cell.__qualname__
            and cb.__module__ == __name__
        ):
            shell.events.unregister("post_run_cell", cb)
