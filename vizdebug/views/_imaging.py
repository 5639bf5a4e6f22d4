"""Display-scale arrays to small encoded pictures (data URIs) for HTML grids."""

from __future__ import annotations

import base64
import io

import numpy as np

NONFINITE_RGB = (255, 0, 255)  # magenta marks NaN/Inf pixels: never a colour of real data


def cell_size(n: int) -> int:
    """Pixel size of one grid cell for a page of ``n`` images."""
    if n <= 16:
        return 128
    if n <= 64:
        return 96
    return 72 if n <= 128 else 56


def to_uint8_hwc(display: np.ndarray) -> np.ndarray:
    """C x H x W in [0, 1] (NaN for non-finite) to H x W x C uint8, NaN painted magenta."""
    bad = np.isnan(display).any(axis=0)
    img = np.nan_to_num(display, nan=0.0)
    out = (np.clip(img, 0, 1) * 255 + 0.5).astype(np.uint8).transpose(1, 2, 0)
    if bad.any():
        if out.shape[2] == 1:
            out = np.repeat(out, 3, axis=2)
        out[bad, :3] = NONFINITE_RGB
        if out.shape[2] == 4:
            out[bad, 3] = 255
    return out


def display_size(native: tuple[int, int], size: int, thinnest: int = 4) -> tuple[int, int]:
    """``(width, height)`` in CSS px of an image of ``native`` (h, w) drawn in a cell of
    ``size`` px: the longer side fills the cell, the shorter keeps the aspect ratio but is
    at least ``thinnest`` px (a 1 x 200 signal stays visible).

    >>> display_size((8, 8), 128), display_size((1, 200), 128)
    ((128, 128), (128, 4))
    """
    h, w = native
    k = size / max(h, w)
    return max(thinnest, round(w * k)), max(thinnest, round(h * k))


def encode(display: np.ndarray, size: int) -> tuple[str, int, int]:
    """Encode one image for a cell of ``size`` px: (data URI, width, height) as stored.

    Small images stay at native resolution as PNG (the browser upscales them crisply);
    larger ones are downscaled to the cell and stored as JPEG, or PNG when they have alpha.
    """
    from PIL import Image

    arr = to_uint8_hwc(display)
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[arr.shape[2]]
    img = Image.fromarray(arr[:, :, 0] if mode == "L" else arr, mode)
    h, w = arr.shape[:2]
    if max(h, w) > size:  # fit the cell; a thin strip keeps at least one pixel across
        k = size / max(h, w)
        img = img.resize((max(1, round(w * k)), max(1, round(h * k))), Image.Resampling.BILINEAR)
    buf = io.BytesIO()
    if max(h, w) > 48 and mode != "RGBA":
        img.save(buf, format="JPEG", quality=85)
        mime = "jpeg"
    else:
        img.save(buf, format="PNG", optimize=False)
        mime = "png"
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f"data:image/{mime};base64,{data}", img.width, img.height


# class 0 (background) black, then well-separated colours (tab10 order)
MASK_PALETTE = np.array([
    (0, 0, 0), (31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
    (140, 86, 75), (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207),
], dtype=np.uint8)


def encode_mask(mask: np.ndarray, size: int) -> str:
    """An integer H x W mask as a PNG data URI, one colour per class id (ids past the
    palette reuse it; negative ids, e.g. an ignore index of -1, are white), never blended:
    a larger mask is shrunk by nearest neighbour, so class boundaries stay exact."""
    from PIL import Image

    ids = np.asarray(mask, dtype=np.int64)
    rgb = MASK_PALETTE[np.where(ids > 0, (ids - 1) % (len(MASK_PALETTE) - 1) + 1, 0)]
    rgb[ids < 0] = 255
    img = Image.fromarray(rgb, "RGB")
    h, w = ids.shape
    if max(h, w) > size:
        k = size / max(h, w)
        img = img.resize((max(1, round(w * k)), max(1, round(h * k))), Image.Resampling.NEAREST)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
