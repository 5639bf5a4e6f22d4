"""What the embedding view sends to the browser: classes, thumbnails, and the static picture.

Pure helpers (arrays in, arrays or strings out) under :mod:`vizdebug.views.embeddings`.
"""

from __future__ import annotations

import base64
import html
import struct
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._env import is_tensor
from ..errors import VizdebugError, VizdebugTypeError, describe

THUMB_MAX = 20000  # more thumbnails than this would make the page too heavy
THUMB_SIZE = 64
PICTURE_PX = 420
# tab20, reordered so the first ten are tab10: colours stay apart for up to 20 classes
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896",
           "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5")
NO_CLASS = "#bbbbbb"


@dataclass(frozen=True)
class Classes:
    """Labels and predictions as codes into one list of names (-1: none), so a class has
    the same colour whichever of the two the points are coloured by."""

    names: list[str]
    labels: np.ndarray | None
    predictions: np.ndarray | None


def class_codes(labels: np.ndarray | None, predictions: np.ndarray | None) -> Classes:
    """Codes of labels and predictions in one shared class list.

    >>> c = class_codes(np.array([2, 0, 2]), np.array([0, 0, 1]))
    >>> c.names, c.labels.tolist(), c.predictions.tolist()
    (['0', '1', '2'], [2, 0, 2], [0, 0, 1])
    """
    given = [v for v in (labels, predictions) if v is not None]
    if not given:
        return Classes([], None, None)
    arrays = [np.asarray(v) for v in given]
    kinds = {a.dtype.kind for a in arrays}
    if kinds <= set("biu") or kinds <= set("f") or kinds <= set("U"):  # one kind: no objects
        joint = np.concatenate(arrays)  # (sorting 1M Python objects took 1.3 s)
    else:
        joint = np.concatenate([a.astype(object) for a in arrays])
    try:
        names, codes = _unique(joint)
    except TypeError:  # mixed types: compare as text
        names, codes = np.unique(joint.astype(str), return_inverse=True)
    codes = codes.reshape(-1).astype(np.int32)
    first = codes[: len(given[0])]
    second = codes[len(given[0]):] if len(given) == 2 else None
    text = [_text(v) for v in names.tolist()]
    if labels is None:
        return Classes(text, None, first)
    return Classes(text, first, second)


def _unique(joint: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(joint, return_inverse=True)``; for whole numbers in a small range by
    counting instead of sorting (1M labels: a tenth of the time)."""
    if joint.dtype.kind in "iu" and len(joint):
        lo, hi = int(joint.min()), int(joint.max())
        if hi - lo <= 4 * len(joint) + 1024:
            index = joint.astype(np.int64) - lo
            present = np.flatnonzero(np.bincount(index, minlength=hi - lo + 1))
            lookup = np.zeros(hi - lo + 1, dtype=np.int64)
            lookup[present] = np.arange(len(present))
            return (present + lo).astype(joint.dtype), lookup[index]
    return np.unique(joint, return_inverse=True)


def no_predictions(classes: Classes, count: int) -> Classes:
    """``classes`` with ``count`` more predictions of "none" (-1), when it has predictions.

    >>> no_predictions(class_codes(None, np.array([1])), 2).predictions.tolist()
    [0, -1, -1]
    """
    if classes.predictions is None:
        return classes
    unknown = np.full(count, -1, dtype=classes.predictions.dtype)
    return Classes(classes.names, classes.labels, np.concatenate([classes.predictions, unknown]))


def default_colour(classes: Classes, losses: np.ndarray | None) -> str:
    """What the points are coloured by at first: labels, else predictions, else losses."""
    if classes.labels is not None:
        return "label"
    return "prediction" if classes.predictions is not None else (
        "loss" if losses is not None else "none")


def suspect_positions(geo: Any) -> list[int]:
    """Where the label-noise suspects of a :class:`~.findings.Geometry` (or ``None``) sit
    among the points drawn."""
    if geo is None or geo.suspects is None:
        return []
    return geo.sample[geo.suspects.positions].tolist()


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def thumbnails(images: Any, n: int) -> tuple[list[str], str]:
    """One small data-URI picture per point, or ``([], why not)``.

    Examples
    --------
    >>> uris, note = thumbnails(np.random.rand(3, 8, 8), 3)
    >>> len(uris), uris[0][:22], note
    (3, 'data:image/png;base64,', '')
    """
    if images is None:
        return [], ""
    if n > THUMB_MAX:
        return [], f"no thumbnails: {n:,} points is more than {THUMB_MAX:,}"
    from ..analysis.datasets.images import infer_scaling, to_display
    from ..data.batch import make_batch
    from ._imaging import encode

    shape = getattr(images, "shape", ())
    layout = "NHW" if len(shape) == 3 and shape[0] == n else "auto"  # (3, 8, 8): 3 pictures
    batch = make_batch(images, layout=layout, what="images")
    if batch.kind != "image" or len(batch) != n:
        return [], (f"no thumbnails: images of shape {shape} are not {n} pictures "
                    "(pass N x H x W or N x C x H x W)")
    scaling = infer_scaling(batch.images) if batch.images is not None else None
    uris = []
    for item in batch.items:
        shown = to_display(item, scaling or infer_scaling(item[None]))
        uris.append(encode(shown, THUMB_SIZE)[0])
    return uris, ""


def point_colours(classes: Classes, losses: np.ndarray | None, n: int) -> np.ndarray:
    """``n x 3`` uint8 colours for the static picture: by label, else prediction, else loss."""
    codes = classes.labels if classes.labels is not None else classes.predictions
    if codes is not None:
        table = np.array([_rgb(PALETTE[i % len(PALETTE)]) for i in range(max(1, len(classes.names)))]
                         + [_rgb(NO_CLASS)], dtype=np.uint8)
        return table[np.where(codes >= 0, codes, len(table) - 1)]
    if losses is not None and np.isfinite(losses).any():
        rank = np.argsort(np.argsort(np.nan_to_num(losses, nan=-np.inf))) / max(1, n - 1)
        low, high = np.array(_rgb("#2c7bb6")), np.array(_rgb("#d7191c"))
        return (low + rank[:, None] * (high - low)).astype(np.uint8)
    return np.tile(np.array(_rgb(PALETTE[0]), dtype=np.uint8), (n, 1))


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))


def scatter_png(xy: np.ndarray, colours: np.ndarray, px: int = PICTURE_PX) -> str:
    """The points (in [-1, 1]) drawn as 2 x 2 dots on white, as a PNG data URI; later
    points drawn over earlier ones, like the live view.

    >>> scatter_png(np.zeros((1, 2), np.float32), np.zeros((1, 3), np.uint8))[:22]
    'data:image/png;base64,'
    """
    canvas = np.full((px, px, 3), 255, dtype=np.uint8)
    col = np.clip(((xy[:, 0] + 1) / 2 * (px - 2)).astype(int), 0, px - 2)
    row = np.clip(((1 - xy[:, 1]) / 2 * (px - 2)).astype(int), 0, px - 2)
    for dr in (0, 1):
        for dc in (0, 1):
            canvas[row + dr, col + dc] = colours
    return "data:image/png;base64," + base64.b64encode(png_bytes(canvas)).decode("ascii")


def png_bytes(rgb: np.ndarray) -> bytes:
    """An ``h x w x 3`` uint8 picture as PNG bytes, with zlib alone: importing Pillow costs
    0.1-0.2 s, more than the first picture can spare in a cold process. Level 3: a 420 px
    scatter in 18 ms and 30 KB, where level 6 took 64 ms for 25 KB.

    >>> png_bytes(np.zeros((2, 3, 3), np.uint8))[:8]
    b'\\x89PNG\\r\\n\\x1a\\n'
    """
    h, w, _ = rgb.shape
    raw = np.zeros((h, 1 + 3 * w), dtype=np.uint8)  # filter byte 0 (none) per row
    raw[:, 1:] = rgb.reshape(h, 3 * w)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw.tobytes(), 3)) + chunk(b"IEND", b""))


# The static legend styles itself: a report or an nbconvert page holds the fragment without
# the widget's stylesheet (embeddings.css), and an unstyled <i> is an empty inline box.
_LEGEND_STYLE = "display:flex;flex-wrap:wrap;gap:4px 10px;margin:4px 0;font-size:12px"
_SWATCH_STYLE = ("display:inline-block;width:10px;height:10px;border-radius:50%;"
                 "margin-right:3px;vertical-align:-1px")


def legend_html(classes: Classes, limit: int = 20) -> str:
    """Class swatches, names escaped."""
    items = [f'<span class="vd-emb-key"><i style="{_SWATCH_STYLE};'
             f'background:{PALETTE[i % len(PALETTE)]}"></i>{html.escape(name)}</span>'
             for i, name in enumerate(classes.names[:limit])]
    more = len(classes.names) - limit
    tail = f'<span class="vd-note"> and {more} more classes</span>' if more > 0 else ""
    return f'<div class="vd-emb-legend" style="{_LEGEND_STYLE}">{"".join(items)}{tail}</div>'


def picture_note(method: str, layout_name: str, running: bool) -> str:
    """The line under a static picture while its view still works: what the picture is
    (the PCA preview, or the refined layout whose figures are still being measured).
    ``layout_name`` and ``running`` must be read together with the picture drawn."""
    if not running:
        return ""
    if layout_name == "PCA preview":
        text = f"refining with {method} (this picture is the PCA preview)"
    else:
        text = f"this picture is the {layout_name} layout; its figures are still being measured"
    return f'<div class="vd-note vd-emb-picture-note">{html.escape(text)}</div>'


def info_html(shape: tuple[int, int], layout: str, how: str, notes: list[str], error: str,
              tail: str) -> str:
    """The side panel: size, the layout and how it was made, notes, the error, then
    ``tail`` (the quality table and findings, already HTML); every string escaped.

    >>> info_html((3, 2), "UMAP", "", ["<b>"], "", "")[:62]
    '<div class="vd-emb-info"><b>3 points</b> &middot; 2 dimensions'
    """
    made = f" ({html.escape(how)})" if how else ""
    head = (f"<b>{shape[0]:,} points</b> &middot; {shape[1]} dimensions &middot; layout: "
            f"{html.escape(layout)}{made}")
    body = "".join(f'<div class="vd-note">{html.escape(t)}</div>' for t in notes)
    if error:
        body += f'<div class="vd-note" style="color:#c62828">{html.escape(error)}</div>'
    return f'<div class="vd-emb-info">{head}{body}{tail}</div>'


def quality_html(quality: dict[str, float | None], method: str, n: int) -> str:
    """The quality figures as a small table (and the sample sizes when not all ``n``)."""
    def cell(v: float | None) -> str:
        return "&ndash;" if v is None or v != v else f"{v:.3f}"

    rows = [("trustworthiness of the picture (k=5)", quality.get("trustworthiness")),
            ("kNN accuracy of labels, features (k=10)", quality.get("knn_features")),
            (f"kNN accuracy of labels, {html.escape(method)} picture", quality.get("knn_layout"))]
    body = "".join(f"<tr><td>{name}</td><td>{cell(v)}</td></tr>" for name, v in rows)
    parts = [f"{what} on a fixed sample of {m:,} points" for what, m in
             (("trustworthiness", quality.get("points")), ("kNN", quality.get("knn_points")))
             if m is not None and m < n]
    note = f'<div class="vd-note">{"; ".join(parts)}</div>' if parts else ""
    return f'<table class="vd-table vd-emb-quality">{body}</table>{note}'


def as_losses(values: np.ndarray) -> np.ndarray:
    """Losses as float64 (one per point, already checked for length)."""
    if values.dtype.kind not in "biuf":
        raise VizdebugTypeError(f"losses must be numbers, got dtype {values.dtype}")
    return values.astype(np.float64)


def check_images(images: Any, n: int) -> None:
    """Refuse images that are not one picture per point, naming what was passed."""
    if images is None:
        return
    try:
        count = len(images)
    except TypeError:
        raise VizdebugTypeError(f"images ({describe(images)}) must be a sequence of pictures, "
                                "one per point") from None
    if count != n:
        raise VizdebugError(f"images ({describe(images)}) must hold one picture per point: "
                            f"the features have {n} rows")


def take(images: Any, rows: np.ndarray, n: int) -> Any:
    """The images of the kept rows (all of them when no row was dropped)."""
    if images is None or len(rows) == n:
        return images
    if isinstance(images, np.ndarray) or is_tensor(images):
        return images[rows]
    return [images[i] for i in rows.tolist()]


def f32(values: np.ndarray | None) -> bytes:
    return b"" if values is None else np.asarray(values, dtype="<f4").tobytes()


def i32(values: np.ndarray | None) -> bytes:
    return b"" if values is None else np.asarray(values, dtype="<i4").tobytes()


def code_width(n_names: int) -> int:
    """Bytes per class code sent to the browser: 1 up to 255 classes, 2 up to 65,535, else
    4 (the largest value of the narrow widths stands for "no class").

    >>> code_width(10), code_width(300), code_width(70000)
    (1, 2, 4)
    """
    return 1 if n_names < 255 else 2 if n_names < 65535 else 4


def code_bytes(codes: np.ndarray | None, n_names: int) -> bytes:
    """Class codes (-1: none) as little-endian bytes of :func:`code_width` each: at 1M
    points 1 MB instead of 4.

    >>> code_bytes(np.array([0, 2, -1]), 3)
    b'\\x00\\x02\\xff'
    """
    if codes is None:
        return b""
    width = code_width(n_names)
    if width == 4:
        return i32(codes)
    kind = "<u1" if width == 1 else "<u2"
    return np.where(codes >= 0, codes, np.iinfo(kind).max).astype(kind).tobytes()


def rows_bytes(rows: np.ndarray) -> bytes:
    """The input index of each point drawn, as int32 bytes, or nothing where it is the
    point's own position (no row was left out): 4 MB saved at 1M points.

    >>> rows_bytes(np.arange(3)), len(rows_bytes(np.array([0, 2])))
    (b'', 8)
    """
    if len(rows) == 0 or (rows[0] == 0 and rows[-1] == len(rows) - 1):
        return b""  # rows are increasing and distinct: first 0 and last n-1 is 0..n-1
    return i32(rows)


def selected_grid(images: Any, where: np.ndarray, classes: Classes, n: int | None) -> Any:
    """The images at positions ``where`` (with their labels) as a :func:`show_batch` grid."""
    from .batch import show_batch

    picked = take(images, where, -1)
    layout = "NHW" if len(getattr(picked, "shape", ())) == 3 else "auto"
    codes = classes.labels
    source = picked if codes is None else (picked, codes[where].tolist())
    return show_batch(source, n, classes=classes.names or None, layout=layout)
