"""How a tabular input is normalised, read from a sampled forward's first input (an (N, F)
float batch): whether every row was standardised across its features, and how much each
feature still varies across the batch. A z-score taken along the wrong axis (each sample
over its features instead of each feature over the samples) leaves rows of mean 0 and
standard deviation 1 whose features barely vary from sample to sample; read by
:func:`vizdebug.analysis.training.inputs.rule_rows_standardised`."""

from __future__ import annotations

from typing import Any

ROWS_MIN = 8        # a batch this large at least
FEATURES = (3, 4096)  # features per row looked at


def row_profile(x: Any) -> list[float] | None:
    """``[largest |row mean|, smallest distance of a row's std to 1 (population or sample
    std, whichever is nearer) taken at its largest, largest column std / whole std]`` of an
    (N, F) float tensor, in one read; None for other inputs."""
    import torch

    if not (isinstance(x, torch.Tensor) and x.ndim == 2 and x.is_floating_point()):
        return None
    n, f = x.shape
    if n < ROWS_MIN or not FEATURES[0] <= f <= FEATURES[1] or x.layout != torch.strided:
        return None
    with torch.no_grad():
        xf = x.detach().float()
        pop, sample = xf.std(1, correction=0), xf.std(1, correction=1)
        to_one = torch.minimum((pop - 1).abs(), (sample - 1).abs())
        whole = xf.std().clamp_min(1e-12)
        read = torch.stack([xf.mean(1).abs().max(), to_one.max(),
                            xf.std(0).max() / whole]).tolist()
    return [float(v) for v in read]
