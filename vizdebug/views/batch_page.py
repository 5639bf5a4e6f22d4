"""One page of a BatchView as self-contained HTML: grid, raw statistics, findings.

Pure presentation: statistics and flags come from ``analysis``; every user string
(class names, column names) is escaped here.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..analysis.datasets.columns import ColumnStats
from ..analysis.datasets.images import Scaling, channel_stats, infer_scaling
from ..analysis.datasets.input_checks import displays_and_flags, image_findings, table_findings
from ..analysis.datasets.relations import page_relations
from ..data.batch import Batch
from ..data.targets import LabelSet
from ..errors import VizdebugTypeError, describe, short_repr
from ..findings import Findings, findings_html
from ._imaging import cell_size, display_size, encode, encode_mask

TABLE_ROWS = 30
_BAD_FLAGS = {"non-finite", "none"}


@dataclass
class Page:
    """A rendered page: its HTML, its findings and the raw statistics shown."""

    html: str
    findings: Findings
    stats: list[dict[str, Any]]
    n_items: int
    flags: list[list[str]]


def check_classes(classes: Any) -> Sequence | Mapping | None:
    """``classes`` as given when it can name labels (a list of names, or a dict from label
    to name), else a :class:`VizdebugTypeError` that says what would work."""
    if classes is None or isinstance(classes, Mapping):
        return classes
    if isinstance(classes, (str, bytes)) or not hasattr(classes, "__len__") \
            or not hasattr(classes, "__getitem__"):
        raise VizdebugTypeError(
            f"classes must be a list of class names (indexed by label) or a dict from label "
            f"to name, got {describe(classes)}: {short_repr(classes)}; e.g. classes=['cat', 'dog'] "
            "or classes={0: 'cat', 1: 'dog'}"
        )
    return list(classes)


def label_text(label: Any, classes: Sequence | Mapping | None) -> str:
    """The caption for one label: the class name when ``classes`` knows it."""
    if label is None:
        return ""
    if isinstance(label, LabelSet):  # a multi-label target: the set of its classes
        return "{" + ", ".join(label_text(v, classes) for v in label) + "}"
    if isinstance(classes, Mapping):
        return str(classes.get(label, f"{label} (?)"))
    if classes is not None and isinstance(label, (int, np.integer)) and not isinstance(label, bool):
        return str(classes[label]) if 0 <= label < len(classes) else f"{label} (?)"
    if isinstance(label, float):
        return f"{label:.4g}"
    return str(label)


def render_page(batch: Batch, number: int, *, classes=None, mean=None, std=None,
                note: str = "") -> Page:
    """Render one canonical batch (image or table) as page ``number`` (0-based)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # huge values: inf stats
        return _render_page(batch, number, classes, mean, std, note)


def _render_page(batch: Batch, number: int, classes, mean, std, note: str) -> Page:
    if batch.kind == "table":
        return _table_page(batch, number, classes, note)
    scaling = infer_scaling(batch.images, mean, std) if batch.images is not None else None
    displays, flags = displays_and_flags(batch, scaling, mean, std)
    relations, out_of_step = page_relations(batch)
    found = Findings([*image_findings(batch, flags, scaling), *relations])
    flags = [[*f, "misaligned"] if k in out_of_step else f for k, f in enumerate(flags)]
    stats = channel_stats(batch.images) if batch.images is not None else []
    grid = _grid(batch, displays, flags, classes)
    head = _head(batch, number, scaling, note)
    side = _stats_table(stats) + "<h4>Findings</h4>" + findings_html(
        found, empty="No problems found in this batch.")
    body = (f'<div class="vd-batch" data-page="{number}" data-count="{len(batch)}">{head}'
            f'<div class="vd-body">{grid}<div class="vd-side">{side}</div></div></div>')
    return Page(body, found, stats, len(batch), flags)


def _head(batch: Batch, number: int, scaling: Scaling | None, note: str) -> str:
    x = batch.images
    dtype = f"{x.dtype}" if x is not None else "mixed"
    shape = f"{tuple(x.shape)}" if x is not None else f"{len(batch.items)} images"
    kind = "tensor" if batch.was_tensor else "array"
    parts = [f"<b>Batch {number + 1}</b> &middot; {len(batch)} images &middot; {kind} "
             f"{html.escape(shape)} {html.escape(dtype)} &middot; {html.escape(batch.layout_note)}"]
    if scaling is not None:
        parts.append(f"shown as: {html.escape(scaling.note)}")
    parts += [html.escape(t) for t in [*batch.notes, *batch.info, note] if t]
    return '<div class="vd-head">' + "<br>".join(parts) + "</div>"


def _grid(batch: Batch, displays, flags, classes) -> str:
    size = cell_size(len(batch.items))
    cells = []
    for k, shown in enumerate(displays):
        cap = label_text(batch.labels[k], classes) if batch.labels else ""
        native = None if batch.items[k] is None else batch.items[k].shape[1:]
        pic = _picture(shown, native, batch.index_of(k), size)
        if batch.masks is not None:  # the image and its mask side by side
            pic = f'<div class="vd-pair">{pic}{_mask_picture(batch.masks[k], size)}</div>'
            cap = cap or _mask_caption(batch.masks[k], classes)
        cells.append(_cell(pic, batch.index_of(k), cap, flags[k]))
    width = size + 10 if batch.masks is None else 2 * size + 14
    style = f"grid-template-columns:repeat(auto-fill,{width}px)"
    return f'<div class="vd-grid" style="{style}">{"".join(cells)}</div>'


def _picture(shown, native, index, size) -> str:
    if shown is None:
        return f'<div class="vd-missing" style="width:{size}px;height:{size}px">None</div>'
    uri, w, _ = encode(shown[0], size)
    width, height = display_size(native, size)
    crisp = ' class="vd-crisp"' if width >= 2 * w else ""
    return f'<img{crisp} src="{uri}" width="{width}" height="{height}" alt="sample {index}">'


def _mask_picture(mask: np.ndarray, size: int) -> str:
    """The item's segmentation mask beside it, one colour per class (0 black)."""
    uri = encode_mask(mask, size)
    width, height = display_size(mask.shape, size)
    return (f'<img class="vd-crisp vd-mask" src="{uri}" width="{width}" height="{height}" '
            f'alt="mask">')


def _mask_caption(mask: np.ndarray, classes) -> str:
    ids = np.unique(mask).tolist()
    names = ", ".join(label_text(v, classes) for v in ids[:8])
    return f"mask: {names}{', ...' if len(ids) > 8 else ''}"


def _cell(pic: str, index, caption, flags) -> str:
    cls = "vd-bad" if _BAD_FLAGS & set(flags) else ("vd-warn" if flags else "")
    badges = "".join(f'<span class="vd-flag vd-flag-{f}">{f}</span>' for f in flags)
    text = html.escape(caption)
    title = html.escape(f"index {index}" + (f": {caption}" if caption else ""), quote=True)
    return (f'<figure class="vd-cell {cls}" data-index="{index}" data-flags="{" ".join(flags)}" '
            f'title="{title}">{pic}<figcaption><span class="vd-idx">#{index}</span> '
            f'<span class="vd-label">{text}</span></figcaption>{badges}</figure>')


def _num(v: float, bad: bool = False) -> str:
    text = "nan" if not np.isfinite(v) else f"{v:.4g}"
    return f'<span class="vd-bad-num">{text}</span>' if bad else text


def _stats_table(stats: list[dict[str, Any]]) -> str:
    if not stats:
        return '<p class="vd-note">Per-channel statistics need images of one shape.</p>'
    rows = "".join(
        f"<tr><td>{s['channel']}</td><td>{_num(s['min'])}</td><td>{_num(s['max'])}</td>"
        f"<td>{_num(s['mean'])}</td><td>{_num(s['std'])}</td>"
        f"<td>{_num(s['non_finite'], s['non_finite'] > 0)}</td></tr>" for s in stats
    )
    return ("<h4>Raw values, as the model receives them</h4><table class='vd-table vd-stats'>"
            "<tr><th>channel</th><th>min</th><th>max</th><th>mean</th><th>std</th>"
            f"<th>non-finite</th></tr>{rows}</table>")


def _table_page(batch: Batch, number: int, classes, note: str) -> Page:
    frame = batch.table
    found = Findings(table_findings(batch))
    summary = ColumnStats.from_frame(frame)
    cols = summary.shown()  # a wide table: a bounded page, linear in its cells
    shown = frame.iloc[:TABLE_ROWS, cols]
    header = "".join(f"<th>{html.escape(str(c))}</th>" for c in shown.columns)
    label_head = "<th>label</th>" if batch.labels else ""
    rows = []
    for r, values in enumerate(shown.itertuples(index=False, name=None)):
        lab = (f"<td>{html.escape(label_text(batch.labels[r], classes))}</td>"
               if batch.labels else "")
        cells = "".join(f"<td>{html.escape(_cell_text(v))}</td>" for v in values)
        rows.append(f"<tr><td>{batch.index_of(r)}</td>{lab}{cells}</tr>")
    stats = [{"column": str(c), "dtype": str(d), **summary.row(k)}
             for k, c, d in zip(cols.tolist(), shown.columns, shown.dtypes)]
    more = f" (first {TABLE_ROWS} of {len(frame)} rows)" if len(frame) > TABLE_ROWS else ""
    body = (
        f'<div class="vd-batch vd-tabular" data-page="{number}" data-count="{len(frame)}">'
        f'<div class="vd-head"><b>Batch {number + 1}</b> &middot; tabular, {len(frame)} rows x '
        f"{frame.shape[1]} columns{more}{_columns_note(len(cols), frame.shape[1], summary)}"
        f"{(' &middot; ' + html.escape(note)) if note else ''}</div>"
        f'<div class="vd-body"><div style="overflow:auto;max-height:420px">'
        f"<table class='vd-table'><tr><th>#</th>{label_head}{header}</tr>{''.join(rows)}</table>"
        f'</div><div class="vd-side">{_column_stats_table(stats)}<h4>Findings</h4>'
        f"{findings_html(found, empty='No problems found in this batch.')}</div></div></div>"
    )
    return Page(body, found, stats, len(frame), [])


def _columns_note(shown: int, total: int, summary: ColumnStats) -> str:
    """What a page of a wide table leaves out, and which columns it chose."""
    if shown >= total:
        return ""
    flagged = int((summary.nonfinite > 0).sum())
    first = " (those with missing or non-finite values first)" if flagged else ""
    return f"<br>showing {shown} columns{first} &hellip; and {total - shown:,} more columns"


def _cell_text(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _column_stats_table(stats: list[dict[str, Any]]) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(s['column'])}</td><td>{html.escape(s['dtype'])}</td>"
        f"<td>{_num(s.get('min', np.nan))}</td><td>{_num(s.get('max', np.nan))}</td>"
        f"<td>{_num(s.get('mean', np.nan))}</td><td>{_num(s.get('std', np.nan))}</td>"
        f"<td>{_num(s['missing'], s['missing'] > 0)}</td></tr>" for s in stats
    )
    return ("<h4>Columns</h4><table class='vd-table vd-stats'><tr><th>column</th><th>dtype</th>"
            "<th>min</th><th>max</th><th>mean</th><th>std</th><th>missing</th></tr>"
            f"{rows}</table>")
