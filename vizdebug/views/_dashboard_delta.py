"""What the live dashboard sends on a refresh: the points that changed, not the figure.

The widget holds a *snapshot* of every panel (sent rarely) and a *delta* (sent on each
refresh): for each panel that differs from the snapshot, its new layout if that changed,
and per trace either the whole trace or, per data array, how many leading values of the
snapshot's array to keep and the values that follow. The curves are downsampled in
buckets aligned at step 0, so a refresh usually keeps all but the last few points. The
delta is relative to the snapshot, not to the previous delta, so a view that renders
late (a second view, a reloaded page) rebuilds the current state from two traits; the
snapshot is renewed when the delta grows past a share of it. ``changed`` names the
panels that differ from the previous refresh: the only ones the browser redraws.
The browser side is ``applyPanelDelta`` in ``static/dashboard_state.js``.
"""

from __future__ import annotations

from typing import Any

ARRAYS = ("x", "y", "z", "text", "customdata")
Panels = dict[str, dict[str, Any]]


def common_prefix(a: list, b: list) -> int:
    """How many leading items ``a`` and ``b`` share (list slices compare in C).

    Examples
    --------
    >>> common_prefix([1, 2, 3, 4], [1, 2, 9]), common_prefix([], [1])
    (2, 0)
    """
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _rows(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and isinstance(value[0], list)


def array_patch(old: list, new: list) -> dict[str, Any]:
    """``{"keep": k, "tail": new[k:]}``, or for a 2-d array (rows of columns, such as a
    heatmap's ``z``) ``{"keep": k, "rows": [row[k:] ...]}`` with ``k`` columns kept."""
    if _rows(new) and _rows(old) and len(old) == len(new):
        keep = min(common_prefix(a, b) for a, b in zip(old, new))
        return {"keep": keep, "rows": [row[keep:] for row in new]}
    keep = 0 if _rows(new) or _rows(old) else common_prefix(old, new)
    return {"keep": keep, "tail": new[keep:]}


def trace_patch(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any] | None:
    """How to get ``new`` from ``old`` (``None``: they are equal)."""
    if old == new:
        return None
    rest_old = {k: v for k, v in old.items() if k not in ARRAYS}
    rest_new = {k: v for k, v in new.items() if k not in ARRAYS}
    keys_old = [k for k in ARRAYS if k in old]
    if rest_old != rest_new or keys_old != [k for k in ARRAYS if k in new]:
        return {"full": new}
    arrays = {k: array_patch(old[k], new[k]) for k in keys_old if old[k] != new[k]}
    return {"arrays": arrays}


def panel_patch(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any] | None:
    """``{"layout"?: ..., "count": n, "traces": [[index, trace_patch], ...]}`` or ``None``."""
    if old == new:
        return None
    out: dict[str, Any] = {"count": len(new["data"]), "traces": []}
    if old["layout"] != new["layout"]:
        out["layout"] = new["layout"]
    for i, trace in enumerate(new["data"]):
        patch = trace_patch(old["data"][i], trace) if i < len(old["data"]) else {"full": trace}
        if patch is not None:
            out["traces"].append([i, patch])
    return out


def patch_size(patch: Any) -> int:
    """Values a patch carries (to compare with :func:`state_size`)."""
    if isinstance(patch, dict):
        return sum(patch_size(v) for k, v in patch.items() if k != "layout")
    if isinstance(patch, list):
        return len(patch) + sum(patch_size(v) for v in patch if isinstance(v, (list, dict)))
    return 0


def state_size(panels: Panels) -> int:
    return sum(patch_size(p["data"]) for p in panels.values())


class DeltaEncoder:
    """Turns successive panel states into (snapshot or ``None``, delta) pairs to sync.

    Examples
    --------
    >>> enc = DeltaEncoder(renew_share=1.0)  # renew the snapshot only past the full size
    >>> a = {"p": {"data": [{"x": [1, 2], "y": [3, 4]}], "layout": {}}}
    >>> snap, delta = enc.encode(a)
    >>> snap["rev"], delta["changed"]
    (1, ['p'])
    >>> b = {"p": {"data": [{"x": [1, 2, 3], "y": [3, 4, 5]}], "layout": {}}}
    >>> snap, delta = enc.encode(b)
    >>> snap, delta["panels"]["p"]["traces"]
    (None, [[0, {'arrays': {'x': {'keep': 2, 'tail': [3]}, 'y': {'keep': 2, 'tail': [5]}}}]])
    """

    def __init__(self, renew_share: float = 0.15) -> None:
        self.renew_share = renew_share
        self.rev = 0
        self.snapshot: Panels | None = None
        self.snapshot_rev = 0
        self.last: Panels | None = None

    def encode(self, panels: Panels, renew: bool = False
               ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """``renew``: send a new snapshot whatever the delta's size (the final state)."""
        self.rev += 1
        last = self.last or {}
        changed = [name for name in panels if last.get(name) != panels[name]]
        self.last = panels
        patches: dict[str, Any] = {}
        if self.snapshot is not None and set(self.snapshot) == set(panels) and not renew:
            for name, panel in panels.items():
                patch = panel_patch(self.snapshot[name], panel)
                if patch is not None:
                    patches[name] = patch
            if patch_size(patches) <= self.renew_share * max(state_size(panels), 1):
                delta = {"rev": self.rev, "base": self.snapshot_rev, "changed": changed,
                         "panels": patches}
                return None, delta
        self.snapshot, self.snapshot_rev = panels, self.rev
        snapshot = {"rev": self.rev, "panels": panels}
        return snapshot, {"rev": self.rev, "base": self.rev, "changed": changed, "panels": {}}
