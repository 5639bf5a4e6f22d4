"""Axis order: what an axis-sensitive module received against what the program feeds it.

Two relations, both read from :class:`~vizdebug.records.program.AxisFacts` (the first few
training forwards, collected by ``collect/taps/program.py``):

- **the batch axis of a sequence module.** An RNN/LSTM/GRU or a transformer layer reads
  axis 0 as the batch with ``batch_first=True`` and axis 1 without. The DataLoader says how
  many samples a batch holds; when that number sits on the axis the module reads as time
  (or as the sequence), and the axis it reads as the batch holds another number, the
  module runs along the batch: each sample is a time step of one long sequence. Where the
  loader's batch size is unknown, is 1, or fits both axes, nothing is said; nor where the
  module's batch axis holds 1 (a whole batch made one sequence on purpose: attention
  across the samples, a stream of consecutive steps).
- **a reshape that moves axes before the first convolution.** Its input holds the model
  input's values in their memory order (a ``view``/``reshape``), while a permutation of
  the input's axes would have given the same shape without mixing them (NHWC images
  reshaped to NCHW, a (batch, channels, time, ...) clip reshaped to (batch * time, ...)).
  Neighbouring values are then no longer neighbouring pixels. One channel, or a reshape
  that only merges or splits neighbouring axes, leaves both readings equal: no verdict.
  A first convolution whose channels sit on its input's last axis instead of axis 1
  (NHWC fed as is) is named too: it fails, and the finding says why.
- **embedded tokens on a Conv1d's channel axis.** A Conv1d fed an embedding's output as
  it is, (batch, seq, embedding) for a token input (batch, seq), reads the sequence as
  channels and convolves across the embedding values; the permuted (batch, embedding,
  seq) is the layout it convolves along the text in. Where seq equals the embedding size
  the two readings agree in shape: no verdict.
"""

from __future__ import annotations

from ...findings import Finding
from ...records import TrainingRecords
from ...records.program import AxisFacts

_ATTENTION = ("MultiheadAttention", "Transformer")


def rule_axis_order(rec: TrainingRecords) -> list[Finding]:
    """Sequence modules that run along the loader's batch, and first convolutions fed a
    reshaped (not permuted) input."""
    facts = rec.program
    if facts is None or not facts.axes:
        return []
    batch = facts.loader_batch_size
    out: list[Finding] = []
    seen: set[str] = set()
    for axes in facts.axes:
        if axes.path in seen:
            continue
        found = (_batch_on_time_axis(axes, batch) if axes.kind == "sequence"
                 else _tokens_on_channels(axes) if axes.kind == "conv_tokens"
                 else _reshaped_not_permuted(axes))
        if found is not None:
            seen.add(axes.path)
            out.append(found)
    return out


def _batch_on_time_axis(axes: AxisFacts, batch: int | None) -> Finding | None:
    if batch is None or batch <= 1 or axes.batch_first is None or len(axes.shape) != 3:
        return None
    batch_axis = 0 if axes.batch_first else 1
    other = 1 - batch_axis
    read_as_batch, read_as_time = axes.shape[batch_axis], axes.shape[other]
    if read_as_time != batch or read_as_batch in (batch, 1):
        return None
    attention = axes.cls.startswith(_ATTENTION)
    steps = "positions of one sequence" if attention else "time steps of one sequence"
    effect = ("attention mixes the samples of a batch with each other, not the positions "
              "of each sequence" if attention else
              "the recurrence runs across the samples of the batch, each sample's output "
              "depending on the samples before it")
    shape = tuple(axes.shape)
    layout = "(seq, batch, feature)" if axes.batch_first else "(batch, seq, feature)"
    return Finding(
        "axis-order", "warning",
        f"{axes.cls} {axes.path!r} (batch_first={axes.batch_first}) received {shape}: it "
        f"reads axis {batch_axis} ({read_as_batch}) as the batch and axis {other} "
        f"({read_as_time}) as the {'sequence' if attention else 'time'} axis, but the "
        f"loader's batch size is {batch}, on axis {other}: the {batch} samples are read as "
        f"{steps}; {effect}",
        where=axes.path,
        evidence={"shape": list(axes.shape), "batch_first": axes.batch_first,
                  "loader_batch_size": batch, "model_input": list(axes.root_shape)},
        hint=f"The input is laid out {layout}: construct the module with "
             f"batch_first={not axes.batch_first}, or transpose the input for it "
             "(x.transpose(0, 1)) and its output back.",
    )


def _tokens_on_channels(axes: AxisFacts) -> Finding:
    """A Conv1d fed embedded tokens as (batch, seq, embedding): it reads the sequence as its
    channels and slides along the embedding values."""
    (b, seq, emb), root = axes.shape, tuple(axes.root_shape)
    return Finding(
        "axis-order", "warning",
        f"{axes.cls} {axes.path!r} received ({b}, {seq}, {emb}): the embedded tokens of the "
        f"model input {root}, laid out (batch, seq, embedding). A Conv1d reads axis 1 as its "
        f"channels (in_channels={axes.in_channels}) and slides along axis 2, so it takes the "
        f"{seq} positions of each text as channels and convolves across its {emb} embedding "
        "values instead of along the text: a local pattern of neighbouring tokens is not "
        "what it sees",
        where=axes.path,
        evidence={"shape": list(axes.shape), "model_input": list(root),
                  "in_channels": axes.in_channels, "relation": "tokens on channels"},
        hint=f"Put the embedding on the channel axis before the convolution: "
             f"x = x.permute(0, 2, 1) (batch, {emb}, {seq}), with in_channels={emb}.",
    )


def _channels_last(axes: AxisFacts) -> Finding:
    shape, channels = tuple(axes.shape), axes.in_channels
    return Finding(
        "layout-channels-last", "warning",
        f"{axes.cls} {axes.path!r} expects {channels} channels on axis 1 and received "
        f"{shape}: the {channels} channels are on the last axis (channels-last, NHWC), so "
        f"it reads axis 1 ({shape[1]}) as channels and refuses the input",
        where=axes.path,
        evidence={"shape": list(shape), "in_channels": channels,
                  "model_input": list(axes.root_shape)},
        hint="Move the channels to axis 1 with x.permute(0, 3, 1, 2) before the model (or in "
             "its forward), or load images with ToTensor(), which does it; not with "
             "view/reshape, which would scramble the picture.",
    )


def _reshaped_not_permuted(axes: AxisFacts) -> Finding | None:
    if axes.in_channels is not None and axes.shape[1] != axes.in_channels:
        return _channels_last(axes)
    if not axes.reshaped or axes.permuted or not axes.order:
        return None
    order, root, shape = tuple(axes.order), tuple(axes.root_shape), tuple(axes.shape)
    channels_last = len(root) >= 3 and order[1] == len(root) - 1 and root[-1] == shape[1]
    what = (f"its {root[-1]} channels from the last axis to axis 1" if channels_last
            else f"its axes into the order {order}")
    image = len(shape) >= 4  # (N, C, H, W): pixels; (N, C, L): a sequence's steps
    message = (f"{axes.cls} {axes.path!r} received {shape}: the model input {root} reshaped "
               f"(view/reshape), not permuted. A reshape keeps the memory order, so moving "
               f"{what} this way scrambles the {'picture' if image else 'sequence'}: "
               f"neighbouring values of the convolution's input are no longer neighbouring "
               f"{'pixels' if image else 'steps'} (permute{order} would keep them)")
    hint = (f"Move axes with x.permute{order} (then .reshape(...) where axes are merged), "
            "not view/reshape" + ("; ToTensor() does it for PIL/numpy images"
                                  if channels_last and image else "") + ".")
    evidence = {"shape": list(shape), "model_input": list(root), "permutation": list(order)}
    code = "layout-channels-last" if channels_last else "axis-order"
    return Finding(code, "warning", message, where=axes.path, evidence=evidence, hint=hint)
