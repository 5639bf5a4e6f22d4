"""Where and how often a view shows in a notebook: where it is called, once per cell.

A Jupyter cell displays only its last expression, so ``session.dashboard()`` written
before a training loop (in the same cell) would show nothing until the loop ended. Like
tqdm, every view built by a public call from notebook code shows at once, where it is
called, whether or not it is assigned (``dash = session.dashboard()`` shows too: one rule
for every view). The one exception is a view whose attribute is read at once
(``vd.compare_distributions(a, b).drifted``, ``set(...(a, b).table.feature)``): there the
view is used as data and shows only if displayed. When it is also the cell's last
expression, or ``display(view)`` is called again in the same cell, it is not shown a
second time; in a later cell it shows again.

"Notebook code" is code whose globals are the kernel's user namespace: a cell, or a
function defined in one. A view built inside a library (a Lightning callback, vizdebug's
own ``report``) shows only if that library displays it; a script, a doctest or a terminal
IPython shows nothing (no kernel).

Examples
--------
>>> from vizdebug.views._display import cell_token
>>> cell_token() is None   # no kernel here
True
"""

from __future__ import annotations

import dis
import sys
from typing import Any, TypeVar

from .._env import in_kernel

V = TypeVar("V")


def _shell() -> Any:
    """The kernel's IPython shell, or None outside a Jupyter kernel."""
    if not in_kernel():
        return None
    return sys.modules["IPython"].get_ipython()


def cell_token(shell: Any = None) -> Any:
    """What identifies the cell execution running now: the id of the kernel's
    ``execute_request`` (one per run of a cell, even one run without history), else its
    execution count; None outside a kernel."""
    shell = _shell() if shell is None else shell
    if shell is None:
        return None
    header = getattr(shell, "parent_header", None)
    msg_id = header.get("msg_id") if isinstance(header, dict) else None
    return msg_id or ("execution_count", getattr(shell, "execution_count", None))


def called_from_notebook(frame: Any, shell: Any) -> bool:
    """True when ``frame`` runs notebook code: its globals are the kernel's namespace."""
    if frame is None or shell is None:
        return False
    scope = frame.f_globals
    return scope is getattr(shell, "user_ns", None) or scope is getattr(
        shell, "user_global_ns", None)


def read_at_once(frame: Any) -> bool:
    """True when the call running in ``frame`` has its result's attribute read straight
    after it (``f().table``): the next instruction loads an attribute. False when that
    cannot be told (the view then shows, as it would otherwise)."""
    try:
        after = (i for i in dis.get_instructions(frame.f_code) if i.offset > frame.f_lasti)
        return next(after).opname in ("LOAD_ATTR", "LOAD_METHOD")
    except Exception:
        return False


def shown_where_called(view: V, depth: int = 2) -> V:
    """Display ``view`` now when the public function returning it was called from
    notebook code; return it unchanged.

    Call it in that function's ``return`` statement: ``depth`` counts frames from here to
    the caller to look at (2: the caller of the function calling this). Never raises: a
    view that cannot be shown now is still returned, and shows as the last expression.

    Examples
    --------
    >>> shown_where_called("a view") # no kernel: nothing is displayed
    'a view'
    """
    shell = _shell()
    if shell is None:
        return view
    try:
        frame = sys._getframe(depth)
        if called_from_notebook(frame, shell) and not read_at_once(frame):
            from IPython.display import display

            display(view)
    except Exception:  # a broken front end must not cost the user the view
        pass
    return view


def first_display_in_cell(view: Any) -> bool:
    """True if ``view`` has not been displayed in the running cell yet, and remember that
    it now is; always True outside a kernel (each ``display`` there is asked for)."""
    token = cell_token()
    if token is None:
        return True
    if getattr(view, "_shown_in", None) == token:
        return False
    view._shown_in = token
    return True
