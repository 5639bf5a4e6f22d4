"""Inputs and targets in step: the pair and label probes for each way data is checked.

``check_batch`` and ``show_batch`` hold a whole batch; ``check_dataset`` reads items one by
one, so :class:`RelationSample` keeps a small pooled copy of what the probes need (at most
:data:`PAIR_SAMPLE` image/target pairs on a 64 px grid, :data:`LABEL_SAMPLE` label rows of
at most 16 x 16 px) and judges them at the end.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ...data.arrays import to_numpy
from ...data.batch import Batch, make_batch
from ...data.layout import infer_layout, to_nchw
from ...data.targets import LabelSet
from ...errors import VizdebugError
from ...findings import Finding
from .label_probe import label_findings, probe_features
from .pair_edges import pair_arrays
from .pairs import pair_findings

PAIR_SAMPLE = 256
LABEL_SAMPLE = 1000


def batch_relations(x: Any, y: Any, layout: str = "auto") -> list[Finding]:
    """The pair and label probes on one batch as the model receives it (never raises).

    >>> batch_relations(np.zeros((4, 1, 8, 8)), np.arange(4))
    []
    """
    if y is None:
        return []
    try:
        canon = make_batch(x, y, layout=layout)
    except (VizdebugError, ValueError, TypeError):
        return []
    return _relations(canon, y)[0]


def page_relations(batch: Batch) -> tuple[list[Finding], list[int]]:
    """The probes on a batch view's page (its masks are the targets), and the positions
    of the pairs out of step, for their flags."""
    target = np.stack(batch.masks) if batch.masks is not None else None
    return _relations(batch, target)


def _relations(canon: Batch, target: Any) -> tuple[list[Finding], list[int]]:
    if canon.kind != "image" or canon.images is None:
        return [], []
    indices = [canon.index_of(k) for k in range(len(canon))]
    with np.errstate(all="ignore"):
        found, flagged = pair_findings(canon.images, target, indices)
        labels = canon.labels
        if not found and labels and not isinstance(labels[0], LabelSet):
            found = label_findings(probe_features(canon.images), labels, indices)
    return found, flagged


class RelationSample:
    """Pooled pairs and label rows gathered item by item for ``check_dataset``.

    >>> sample = RelationSample()
    >>> sample.add(0, np.zeros((1, 8, 8)), np.zeros((8, 8), int), None)
    >>> sample.findings()
    []
    """

    def __init__(self) -> None:
        self.pairs: list[tuple[int, np.ndarray, np.ndarray]] = []
        self.rows: list[tuple[int, np.ndarray, Any]] = []

    def add(self, index: int, x: np.ndarray, y: Any, label: Any) -> None:
        """Keep what the probes need of item ``index`` (input ``x``, target ``y``, its
        class label when it has one)."""
        if (x.ndim == 1 and x.dtype.kind in "biuf" and x.size >= 2 and label is not None
                and len(self.rows) < LABEL_SAMPLE):
            self.rows.append((index, x.astype(np.float64), label))  # a table's row
            return
        image = _as_chw(x)
        if image is None:
            return
        if label is not None and len(self.rows) < LABEL_SAMPLE:
            self.rows.append((index, probe_features(image[None])[0], label))
        elif label is None and y is not None and len(self.pairs) < PAIR_SAMPLE:
            self._add_pair(index, image, y)

    def _add_pair(self, index: int, image: np.ndarray, y: Any) -> None:
        try:
            target = to_numpy(y, "target")
        except (VizdebugError, ValueError, TypeError):
            return
        pooled = pair_arrays(image[None], target[None])
        if pooled is not None:
            self.pairs.append((index, pooled[0][0], pooled[1][0]))

    def findings(self) -> list[Finding]:
        """The verdicts on what was gathered (never raises)."""
        with np.errstate(all="ignore"):
            if len(self.pairs) > len(self.rows):
                return self._pair_findings()
            if not self.rows:
                return []
            shapes = Counter(r.shape for _, r, _ in self.rows).most_common(1)[0][0]
            rows = [(i, r, lab) for i, r, lab in self.rows if r.shape == shapes]
            return label_findings(np.stack([r for _, r, _ in rows]),
                                  [lab for _, _, lab in rows], [i for i, _, _ in rows],
                                  noun="rows" if len(shapes) == 1 else "images")

    def _pair_findings(self) -> list[Finding]:
        common = Counter((im.shape, t.shape) for _, im, t in self.pairs).most_common(1)[0][0]
        keep = [(i, im, t) for i, im, t in self.pairs if (im.shape, t.shape) == common]
        images = np.stack([im for _, im, _ in keep])
        targets = np.stack([t for _, _, t in keep])
        return pair_findings(images, targets, [i for i, _, _ in keep])[0]


def _as_chw(x: np.ndarray) -> np.ndarray | None:
    """One dataset item as a C x H x W image, or ``None`` when it is not one."""
    if x.dtype.kind not in "biuf" or x.ndim not in (2, 3):
        return None
    try:
        layout = "HW" if x.ndim == 2 else infer_layout(x.shape).layout
        if layout not in ("HW", "CHW", "HWC"):
            return None
        image = to_nchw(x, layout)[0]
    except VizdebugError:
        return None
    return image if min(image.shape[1:]) >= 4 else None
