"""What a compiled model's run holds: the modules inside ``torch.compile``'d or TorchScript
code get no forward hook (one would break the compiled graph, or is refused), so their
activation statistics are missing by design, not because nothing happened there."""

from __future__ import annotations

from ...findings import Finding
from ...records import TrainingRecords


def rule_compiled(rec: TrainingRecords) -> list[Finding]:
    """An info finding naming the compiled modules and what was not collected there.

    Examples
    --------
    >>> from vizdebug.records import ProgramFacts
    >>> rule_compiled(TrainingRecords(program=ProgramFacts(compiled=["_orig_mod"])))[0].code
    'compiled-model'
    """
    compiled = rec.program.compiled if rec.program is not None else []
    if not compiled:
        return []
    where = ", ".join(repr(p) for p in compiled[:3]) + (
        f" and {len(compiled) - 3} more" if len(compiled) > 3 else "")
    return [Finding(
        "compiled-model", "info",
        f"compiled code from {where}: vizdebug attached no forward hook inside it, so its "
        "modules have no activation statistics (dead units, non-finite activations); "
        "gradient and weight statistics, the logged curves and the loader are collected "
        "as usual",
        where=compiled[0], evidence={"compiled": list(compiled[:20])},
        hint="Hooks inside torch.compile'd code would break its graph (and TorchScript "
             "refuses them). For per-layer activations, watch an eager run for a few steps "
             "(the same model before torch.compile).")]
