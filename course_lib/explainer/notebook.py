"""The explainer's panel under a failing notebook cell (every chapter turns it on in its first cell).

It listens to IPython's `post_run_cell` event: IPython has already printed the traceback, untouched;
the panel is an extra output below it, only for errors the course knows. Errors raised on purpose
inside `expect_error` never get here (it catches them), and its own failure (the expected error
did not come) is shown plainly, without a panel.
"""
_state = {"last": None}


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


def _current_shell():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def enable(shell=None) -> None:
    """Register the panel once with this IPython shell; outside IPython do nothing."""
    shell = shell or _current_shell()
    if shell is None or not hasattr(shell, "events"):
        return
    callbacks = shell.events.callbacks.get("post_run_cell", [])
    if any(getattr(cb, "__qualname__", "") == _panel_after_cell.__qualname__
           and getattr(cb, "__module__", "") == __name__ for cb in callbacks):
        return
    shell.events.register("post_run_cell", _panel_after_cell)


def disable(shell=None) -> None:
    """Remove the panel (tests, or a learner who wants plain tracebacks)."""
    shell = shell or _current_shell()
    if shell is None or not hasattr(shell, "events"):
        return
    for cb in list(shell.events.callbacks.get("post_run_cell", [])):
        if getattr(cb, "__qualname__", "") == _panel_after_cell.__qualname__ and cb.__module__ == __name__:
            shell.events.unregister("post_run_cell", cb)
