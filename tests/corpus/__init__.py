"""The corpus: real faults from public reports of PyTorch programs, each with its fixed
twin, and ordinary working programs as clean controls.

Every program builds a tiny model and data in code, trains for at most a few hundred
steps on the CPU with vizdebug attached as the README shows (``vd.watch(model,
loader=...)``, ``session.log(loss=...)``, ``val_loss``/``val_acc`` once per epoch,
``vd.check_batch``/``vd.check_dataset`` where a practitioner would call them) and returns
what vizdebug said. A fault is *detected* when a warning or error carries its expected
code (and, where one is given, its expected place); a twin or a control must get no
warning and no error.

``ENTRIES`` lists them all; ``python -m tests.corpus.run`` prints the table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vizdebug import Findings

FAULT, TWIN, CONTROL = "fault", "twin", "control"


@dataclass(frozen=True)
class Fault:
    """One reported fault: the program runs it with ``fixed=False``, its twin ``fixed=True``.

    ``code`` is the finding code the fault should produce; ``where`` a substring the
    finding's ``where`` must hold (a module path, a metric name, sample indices), or None
    where any place will do.
    """

    name: str
    program: Callable[[bool], Findings]
    code: str
    where: str | None
    source: str


@dataclass(frozen=True)
class Control:
    """An ordinary working program: it must get no warning and no error."""

    name: str
    program: Callable[[], Findings]
    what: str


@dataclass(frozen=True)
class Entry:
    name: str  # "<fault>", "<fault>/twin" or "control/<name>"
    kind: str  # FAULT, TWIN or CONTROL
    run: Callable[[], Findings]
    source: str
    code: str | None = None
    where: str | None = None


def _entries() -> list[Entry]:
    from . import (
        controls,
        faults_data,
        faults_loop,
        faults_loss,
        faults_numeric,
        heldout_faults,
        heldout_faults2,
        public_a,
        public_b,
        public_c,
        public_d,
        public_e,
        relations_axis,
        relations_order,
        relations_pairs,
        relations_split,
        relations_train,
    )

    out: list[Entry] = []
    for module in (faults_loss, faults_loop, faults_numeric, faults_data, relations_axis,
                   relations_order, relations_pairs, relations_split, relations_train, heldout_faults,
                   heldout_faults2):
        for f in module.FAULTS:
            out.append(Entry(f.name, FAULT, partial(f.program, False), f.source, f.code, f.where))
            out.append(Entry(f"{f.name}/twin", TWIN, partial(f.program, True), f.source))
    for c in controls.CONTROLS:
        out.append(Entry(f"control/{c.name}", CONTROL, c.program, c.what))
    for module in (public_a, public_b, public_c, public_d, public_e):  # public programs, cited
        for c in module.CONTROLS:
            out.append(Entry(f"public/{c.name}", CONTROL, c.program, c.what))
    return out


ENTRIES: list[Entry] = _entries()
