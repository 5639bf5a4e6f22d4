"""The per-epoch metrics table as HTML: plain markup, so it survives a static export
(nbconvert, GitHub, a report) and needs no script. The numbers come from
:func:`vizdebug.analysis.training.epochs.epoch_table`; names are escaped here."""

from __future__ import annotations

import html
import math

from ..analysis.training.epochs import EpochTable, epoch_table
from ..records import TrainingRecords

MAX_ROWS = 40  # the first and last epochs of a longer run, with a note between
MAX_COLUMNS = 12


def _number(value: float, present: bool = True) -> str:
    if not present:
        return "–"  # not logged in this epoch
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.4g}"


def _rows(table: EpochTable) -> list[int | None]:
    """Row indices to show (``None``: the gap of a long run)."""
    n = len(table)
    if n <= MAX_ROWS:
        return list(range(n))
    head = MAX_ROWS // 2
    return [*range(head), None, *range(n - (MAX_ROWS - head), n)]


def table_html(table: EpochTable) -> str:
    """A ``vd-table`` of the epochs, newest last."""
    names = list(table.columns)[:MAX_COLUMNS]
    head = "".join(f"<th>{html.escape(h)}</th>" for h in ("epoch", "steps", *names))
    body = []
    for i in _rows(table):
        if i is None:
            hidden = len(table) - MAX_ROWS
            body.append(f'<tr><td colspan="{len(names) + 2}" class="vd-note">… {hidden} more '
                        "epochs (all in <code>to_frame(&quot;epochs&quot;)</code>)</td></tr>")
            continue
        epoch = int(table.epoch[i])
        label = "in progress" if epoch == -1 else str(epoch)
        cells = "".join(f"<td>{_number(float(table.columns[n][i]), table.has(n, i))}</td>"
                        for n in names)
        body.append(f"<tr><td>{label}</td><td>{int(table.first_step[i])}–"
                    f"{int(table.last_step[i])}</td>{cells}</tr>")
    more = len(table.columns) - len(names)
    note = f" ({more} more columns in <code>to_frame(&quot;epochs&quot;)</code>)" if more > 0 else ""
    source = ("logged <code>epoch</code>" if table.source == "epoch" else
              f"each <code>{html.escape(table.source)}</code> log")
    return (f'<div class="vd-epochs"><p class="vd-note">Per epoch (boundaries from {source}; '
            f"training metrics: mean and last of the epoch){note}</p>"
            f'<table class="vd-table vd-epoch-table"><tr>{head}</tr>{"".join(body)}</table></div>')


def epochs_html(rec: TrainingRecords) -> str:
    """The table of ``rec``'s epochs, or ``""`` when no epoch boundary is known."""
    table = epoch_table(rec)
    return "" if table is None or not len(table) else table_html(table)
