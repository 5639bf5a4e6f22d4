"""Infer the layout of an image array and bring it to N x C x H x W.

Layouts: NCHW, NHWC, NHW, CHW, HWC, HW. Channels are 1, 3 or 4. When a 4-D shape is
ambiguous (both axis 1 and axis 3 could be channels, e.g. 3 x 3 x 3 images) the
PyTorch convention NCHW wins, and the view says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import VizdebugError

LAYOUTS = ("NCHW", "NHWC", "NHW", "CHW", "HWC", "HW")
CHANNELS = (1, 3, 4)
MAX_CHANNELS_HINT = "images have 1 (grey), 3 (RGB) or 4 (RGBA) channels"


@dataclass(frozen=True)
class LayoutGuess:
    """The layout found and how sure we are."""

    layout: str
    ambiguous: bool = False
    reason: str = ""


def _is_ch(n: int) -> bool:
    return n in CHANNELS


def infer_layout(shape: tuple[int, ...], items: int | None = None) -> LayoutGuess:
    """Guess the layout of an array of ``shape`` holding images; ``items``, when known
    (one target per item), is how many images it holds, so a 3-D array of that many rows
    is a batch, never one image.

    Examples
    --------
    >>> infer_layout((64, 3, 32, 32)).layout
    'NCHW'
    >>> infer_layout((64, 32, 32, 3)).layout
    'NHWC'
    >>> infer_layout((64, 8, 8)).layout
    'NHW'
    >>> infer_layout((32, 12, 1)).layout, infer_layout((32, 12, 1), items=32).layout
    ('HWC', 'NHW')
    """
    ndim = len(shape)
    if ndim == 4:
        return _infer_4d(shape)
    if ndim == 3:
        guess = _infer_3d(shape)
        if guess.layout != "NHW" and items is not None and 1 < items == shape[0]:
            return LayoutGuess("NHW", reason=f"axis 0 holds the {items} items")
        return guess
    if ndim == 2:
        return LayoutGuess("HW")
    if ndim > 4:
        raise VizdebugError(
            f"got a {ndim}-D array of shape {tuple(shape)}; show_batch draws images of up to 4 "
            "dimensions (N, C, H, W). For video or volumes pick one frame or slice first, "
            "e.g. x[:, :, t] or x[..., z]."
        )
    raise VizdebugError(
        f"got a {ndim}-D array of shape {tuple(shape)}: that is not an image; pass an array of "
        "shape (N, C, H, W), (N, H, W, C), (N, H, W), (C, H, W), (H, W, C) or (H, W)."
    )


def _infer_4d(shape: tuple[int, ...]) -> LayoutGuess:
    _, a, _, c = shape
    if _is_ch(a) and _is_ch(c):
        return LayoutGuess("NCHW", True, f"axes 1 and 3 both have {a}/{c} entries; assumed NCHW")
    if _is_ch(a):
        return LayoutGuess("NCHW")
    if _is_ch(c):
        return LayoutGuess("NHWC", reason="channels on the last axis")
    raise VizdebugError(
        f"cannot find the channel axis in shape {tuple(shape)}: neither axis 1 ({a}) nor axis 3 "
        f"({c}) is 1, 3 or 4 ({MAX_CHANNELS_HINT}). Feature maps with many channels: pick "
        "channels first, e.g. x[:, :3], or pass layout='NHW' after reshaping."
    )


def _infer_3d(shape: tuple[int, ...]) -> LayoutGuess:
    a, b, c = shape
    if _is_ch(a) and not _is_ch(b) and b > 4 and c > 4:
        if a == 1:
            return LayoutGuess("CHW", reason="one image, channels first")
        colour = "RGB" if a == 3 else "RGBA"
        return LayoutGuess("CHW", True, f"read as one {colour} image of {a} channels; for {a} "
                                        "grey images pass layout='NHW'")
    if _is_ch(c) and not _is_ch(a) and a > 4 and b > 4:
        return LayoutGuess("HWC", reason="one image, channels last")
    return LayoutGuess("NHW")


# A batch read as N items of B x C is a batch of sequences (N, T, F) rather than of grey
# images when its items do not look like pictures. Square items are pictures (digits 8 x 8,
# MNIST 28 x 28), and so are strips one row high (a 1 x 200 profile). Items one column wide
# are one feature over T steps: the (batch, time, 1) input of a univariate LSTM. Other
# items are pictures when their values follow their neighbours along both axes, as pixels
# do (digits' neighbours correlate 0.70 down and 0.40 across, photos more); the features of
# one time step need not (a noisy sine's, side by side, correlate -0.03; one-hot tokens'
# -0.04), while a picture has no axis along which neighbours are strangers.
NEIGHBOUR_CORR = 0.2


def is_sequence_batch(x: np.ndarray) -> bool:
    """True when a 3-D float array of N items of B x C holds sequences (steps x features),
    not grey images (the rule above ``NEIGHBOUR_CORR``).

    >>> t = np.arange(50.0)[None, :, None]
    >>> is_sequence_batch(np.sin(t * np.linspace(0.1, 1, 8)))  # 50 steps of 8 features
    True
    >>> is_sequence_batch(np.zeros((64, 8, 8))), is_sequence_batch(np.zeros((32, 12, 1)))
    (False, True)
    """
    if x.ndim != 3 or x.dtype.kind != "f":
        return False
    _, rows, cols = x.shape
    if rows == cols or rows == 1:
        return False
    if cols == 1:
        return True
    sample = x[:: max(1, len(x) // 64)][:64].astype(np.float64)
    return min(_neighbour_corr(sample, 1), _neighbour_corr(sample, 2)) < NEIGHBOUR_CORR


def _neighbour_corr(x: np.ndarray, axis: int) -> float:
    """Correlation of each finite value with its next neighbour along ``axis``."""
    a = np.delete(x, -1, axis=axis).reshape(-1)
    b = np.delete(x, 0, axis=axis).reshape(-1)
    ok = np.isfinite(a) & np.isfinite(b)
    if not ok.any():
        return 0.0
    with np.errstate(all="ignore"):  # values near the float limits: no correlation to read
        a, b = a[ok] - a[ok].mean(), b[ok] - b[ok].mean()
        scale = np.sqrt((a * a).mean()) * np.sqrt((b * b).mean())
        corr = (a * b).mean() / scale if scale > 0 else 0.0
    return float(corr) if np.isfinite(corr) else 0.0


def to_nchw(x: np.ndarray, layout: str) -> np.ndarray:
    """Return a view of ``x`` as N x C x H x W (no copy where numpy allows)."""
    if layout not in LAYOUTS:
        raise VizdebugError(f"layout must be one of {LAYOUTS} or 'auto', got {layout!r}")
    need = {"NCHW": 4, "NHWC": 4, "NHW": 3, "CHW": 3, "HWC": 3, "HW": 2}[layout]
    if x.ndim != need:
        raise VizdebugError(
            f"layout={layout!r} needs a {need}-D array, got shape {tuple(x.shape)}"
        )
    out = {
        "NCHW": lambda a: a,
        "NHWC": lambda a: a.transpose(0, 3, 1, 2),
        "NHW": lambda a: a[:, None],
        "CHW": lambda a: a[None],
        "HWC": lambda a: a.transpose(2, 0, 1)[None],
        "HW": lambda a: a[None, None],
    }[layout](x)
    if out.shape[1] not in CHANNELS:
        raise VizdebugError(
            f"layout={layout!r} on shape {tuple(x.shape)} gives {out.shape[1]} channels; "
            f"{MAX_CHANNELS_HINT}"
        )
    if 0 in out.shape:
        raise VizdebugError(f"the image array of shape {tuple(x.shape)} is empty")
    return out
