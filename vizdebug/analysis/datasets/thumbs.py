"""Small pictures of flagged images for a finding's evidence (PNG data URIs).

A finding from ``check_batch``/``check_dataset`` carries up to
:data:`vizdebug.findings.THUMBNAILS` of them in ``evidence["thumbnails"]``, so that the
findings view shows what was flagged without the batch at hand (also in a stored run).
"""

from __future__ import annotations

import base64
import io

import numpy as np

from ...findings import THUMBNAILS
from .images import Scaling, infer_scaling, pooled, to_display

THUMB_SIDE = 32  # px: enough to see a blank or saturated image, ~1 KB each as PNG
NONFINITE_RGB = (255, 0, 255)  # NaN/Inf pixels in magenta, as in the batch view


def thumbnail_uri(display: np.ndarray) -> str:
    """A C x H x W image on the display scale [0, 1] (NaN where non-finite) as a PNG data
    URI; one channel is grey, three are RGB, others show their first channel.

    >>> thumbnail_uri(np.zeros((1, 4, 4), dtype=np.float32)).startswith("data:image/png")
    True
    """
    from PIL import Image

    img = display if display.shape[0] in (1, 3) else display[:1]
    bad = np.isnan(img).any(axis=0)
    arr = (np.clip(np.nan_to_num(img), 0, 1) * 255 + 0.5).astype(np.uint8).transpose(1, 2, 0)
    if bad.any():
        arr = np.repeat(arr, 3, axis=2) if arr.shape[2] == 1 else arr
        arr[bad] = NONFINITE_RGB
    picture = Image.fromarray(arr[:, :, 0] if arr.shape[2] == 1 else arr,
                              "L" if arr.shape[2] == 1 else "RGB")
    buf = io.BytesIO()
    picture.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def thumbnails(items: list, positions: list[int], scaling: Scaling | None) -> list[str]:
    """Thumbnails of ``items[p]`` for the first positions (``None`` items are skipped)."""
    out: list[str] = []
    for p in positions:
        item = items[p]
        if item is None:
            continue
        with np.errstate(all="ignore"):
            sc = scaling or infer_scaling(item[None])
            out.append(thumbnail_uri(to_display(pooled(item, THUMB_SIDE), sc)))
        if len(out) >= THUMBNAILS:
            break
    return out
