"""What reaches the loss: the model's output and the targets, checked on sampled steps.

The commonest real training faults sit between the model and its loss: a softmax before
``CrossEntropyLoss`` (which applies ``log_softmax`` itself), probabilities into
``NLLLoss``, a sigmoid before ``BCEWithLogitsLoss``, class ids outside ``[0, C)``, an
``(N, 1)`` output against ``(N,)`` targets that ``MSELoss`` silently broadcasts to
``(N, N)``. None of them raises; the model just trains badly.

:class:`LossWatch` sees every torch loss function, functional (``F.cross_entropy``) or
module (``nn.CrossEntropyLoss`` calls the functional one), through a
``torch.overrides.TorchFunctionMode`` (the public way to see torch function calls). The
mode is entered when a sampled step's forward pass ends and left before the next forward
or when the optimizer steps, so it costs nothing between samples and only the calls from
the end of forward to ``optimizer.step()`` on a sampled step. The checks themselves read
a few reductions of the loss's inputs (one device sync on a sampled step). A tensor that a
softmax or log_softmax made, in forward or after it, is recognised when it reaches a call
after forward by its autograd node, which keeps the axis it normalised: no mode is needed
during forward to see the model's own softmax.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

from ...analysis.training.loss_checks import (
    CLASS_LOSSES,
    NON_NEGATIVE_OPS,
    UNIT_RANGE_OPS,
    batch_of,
    normalised_over_batch,
)
from ...analysis.training.loss_verdicts import (
    CUT_FROM_MODEL,
    NO_GRAPH,
    NORMALISED_AXIS,
    SQUASHED_TWICE,
)
from ...records import MAX_LOSS_FUNCTIONS
from .anomaly import AnomalyEvent
from .loss_rules import (
    LOSS_FUNCTIONS,
    PASS_THROUGH,
    Observation,
    backward_problems,
    check_loss_call,
    normaliser,
    observed,
    op_name,
)

__all__ = ["LOSS_FUNCTIONS", "LossWatch"]

FULL_CHECKS = 16
CHECK_EVERY = 8
SQUASHES = frozenset({"softmax", "sigmoid"})
# outputs made after forward whose op a loss check asks about (see loss_rules.output_op)
TRACKED_OPS = SQUASHES | UNIT_RANGE_OPS | NON_NEGATIVE_OPS
MADE_MAX = 64  # outputs remembered per sampled step
SCAN_MAX = 256  # tensors looked at per sampled step for a softmax over the batch
# functions that apply their own softmax/sigmoid to their first argument
SQUASHING_INPUTS = frozenset({"log_softmax", "cross_entropy", "softmax",
                              "binary_cross_entropy_with_logits"})


class LossWatch:
    """Arms a torch function mode on sampled steps and checks each loss call it sees.

    ``record`` receives an :class:`~vizdebug.collect.checks.anomaly.AnomalyEvent` per problem
    (each code and loss function once per session) holding what was seen, for
    :func:`~vizdebug.analysis.training.loss_verdicts.loss_event_finding` to word; ``on_error``
    gets any exception of the checks, which never reach the training loop.
    """

    def __init__(self, record: Callable[[AnomalyEvent], None],
                 on_error: Callable[[str, BaseException], None],
                 known_params: Callable[[], set[int] | None] | None = None) -> None:
        self.record = record
        self.on_error = on_error
        # ids of the tensors an optimizer may update (the model's parameters and the
        # optimizer's): a leaf of the loss's graph outside them is never trained
        self.known_params = known_params
        self.graph_checked = False
        self.step = 0
        self.calls = 0  # loss calls checked
        self.functions: dict[str, None] = {}  # the loss functions seen, in order (MAX_LOSS_FUNCTIONS)
        self.soft_targets = False  # a class loss given probability targets (mixup, soft labels)
        self.offered = 0  # sampled steps offered to arm()
        self.seen: set[tuple[str, str]] = set()
        self._mode: Any = None
        self._depth = -1
        self._thread = 0  # modes are per thread: only the arming thread may leave it
        # id -> (op, weak reference): outputs of TRACKED_OPS made while armed (and their
        # reshapes), for tensors without an autograd graph to tell the op
        self._made: dict[int, tuple[str, weakref.ref]] = {}
        self.loader_batch: int | None = None  # the watched loader's batch_size, if it has one
        self.batch: int | None = None  # the batch the model received on the armed step
        self._scanned = 0  # tensors looked at on this step (see scan_normalised)
        self._class_inputs: set[int] = set()  # ids of class losses' inputs (their values judged)
        self._normalised_seen = False

    @property
    def armed(self) -> bool:
        return self._mode is not None

    def arm(self, step: int, inputs: tuple = ()) -> None:
        """Watch the torch calls from here (the end of a sampled forward pass, whose
        ``inputs`` the model received): on the first ``FULL_CHECKS`` sampled steps, then on
        every ``CHECK_EVERY``-th (the faults these checks name are there from the first
        batch, bar a rare class id)."""
        if self._mode is not None:
            return
        self.offered += 1
        if self.offered > FULL_CHECKS and self.offered % CHECK_EVERY:
            return
        torch = sys.modules.get("torch")
        if torch is None:
            return
        try:
            mode = _mode_class()(self)
            mode.__enter__()
            self._mode, self.step = mode, step
            self.batch = batch_of(_first_shape(inputs), self.loader_batch)
            self._depth, self._thread = _stack_depth(), threading.get_ident()
        except Exception as exc:
            self.on_error("the loss check", exc)

    def disarm(self) -> None:
        """Stop watching (harmless when not armed). Only the thread that armed it can, and
        a mode pushed after ours by someone else is left alone: ours is popped only when it
        is on top."""
        mode = self._mode
        if mode is None or threading.get_ident() != self._thread:
            return
        try:
            if _stack_depth() == self._depth:
                mode.__exit__(None, None, None)
                self._mode = None
                self._made.clear()
                self._class_inputs.clear()
                self._scanned = 0
        except Exception as exc:
            self._mode = None
            self.on_error("the loss check", exc)

    def inspect(self, name: str, args: tuple, kwargs: dict) -> None:
        """Check one loss call (never raises)."""
        try:
            self.calls += 1
            if len(self.functions) < MAX_LOSS_FUNCTIONS:
                self.functions.setdefault(name)
            if not self.soft_targets and name in CLASS_LOSSES:
                self.soft_targets = _probability_targets(args, kwargs)
            for code, detail in check_loss_call(name, args, kwargs, self._made):
                self._report(name, code, detail, observed(detail))
        except Exception as exc:
            self.on_error("the loss check", exc)

    def backward(self, loss: Any) -> None:
        """``loss.backward()`` on a sampled step: is the loss connected to the model's
        parameters, and only to tensors someone trains? (never raises)"""
        try:
            known = None
            if not self.graph_checked and self.known_params is not None:
                known = self.known_params()  # None until an optimizer is known
            for problem in backward_problems(loss, known):
                self._report("backward", *problem, _backward_seen(problem))
            self.graph_checked = self.graph_checked or known is not None
        except Exception as exc:
            self.on_error("the loss check", exc)

    def note_made(self, name: str, args: tuple, result: Any) -> None:
        """Remember the output of a tracked op, or of a reshape of one, made after forward
        (by id, while armed)."""
        try:
            op = op_name(name)
            if op not in TRACKED_OPS:
                seen = self._made.get(id(args[0])) if op in PASS_THROUGH and args else None
                if seen is None or seen[1]() is not args[0]:
                    return
                op = seen[0]
            if len(self._made) < MADE_MAX:
                self._made[id(result)] = (op, weakref.ref(result))
        except Exception as exc:  # never the training loop's problem
            self.on_error("the loss check", exc)

    def squashed_input(self, name: str, tensor: Any) -> None:
        """A function that applies its own softmax/sigmoid was handed one's output."""
        try:
            seen = self._made.get(id(tensor))
            if seen is None or seen[1]() is not tensor or seen[0] not in SQUASHES:
                return
            self._report(name, "loss-output-mismatch",
                         {"check": SQUASHED_TWICE, "function": name, "source": seen[0]},
                         f"{name} was applied to the output of {seen[0]}")
        except Exception as exc:
            self.on_error("the loss check", exc)

    def scan_normalised(self, name: str, args: tuple, kwargs: dict) -> None:
        """Tensors that reach the torch call ``name`` after forward (the loss being computed)
        and were made by a softmax or log_softmax, in forward or after it: was it taken over
        the batch axis? (never raises). A class loss's input is left to the check of its
        values, here and in later calls (an accuracy's argmax)."""
        if self._normalised_seen or self.batch is None or self._scanned >= SCAN_MAX:
            return
        try:
            for tensor in _tensors(args, kwargs):
                self._scanned += 1
                if name in CLASS_LOSSES:
                    self._class_inputs.add(id(tensor))
                elif id(tensor) not in self._class_inputs:
                    self._normalised(name, tensor)
        except Exception as exc:
            self.on_error("the loss check", exc)

    def _normalised(self, name: str, tensor: Any) -> None:
        seen = normaliser(tensor)
        if seen is None or not normalised_over_batch(seen[2], seen[1], self.batch):
            return
        op, dim, shape = seen
        self._normalised_seen = True
        detail = {"check": NORMALISED_AXIS, "function": _function_name(op), "dim": dim,
                  "shape": list(shape), "batch": self.batch, "consumer": name}
        self._report(detail["function"], "loss-output-mismatch", detail,
                     f"{detail['function']} over axis {dim} of a {shape} tensor, the batch "
                     f"of {self.batch}, reaches {name}")

    def _report(self, name: str, code: str, detail: dict[str, Any], message: str) -> None:
        if (code, name) in self.seen:
            return
        self.seen.add((code, name))
        self.record(AnomalyEvent(code, self.step, f"loss ({name})", name, message, detail))


def _backward_seen(problem: Observation) -> str:
    """The message of a backward observation: what the graph showed."""
    code, detail = problem
    if detail["check"] == NO_GRAPH:
        return "backward() was called on a tensor without a graph (a new leaf)"
    shapes = ", ".join(str(tuple(s)) for s in detail["shapes"])
    if detail["check"] == CUT_FROM_MODEL:
        return (f"backward() on a graph whose only leaves are {detail['count']} new tensors "
                f"(shapes {shapes}): none of the model's parameters")
    return (f"{detail['count']} tensors that require gradients feed the loss but are neither "
            f"parameters of the watched model nor held by its optimizer (shapes {shapes})")


def _first_shape(inputs: tuple) -> tuple[int, ...] | None:
    """The shape of the first tensor the model received (None without one)."""
    first = next((a for a in inputs if hasattr(a, "shape") and hasattr(a, "grad_fn")), None)
    return None if first is None else tuple(first.shape)


def _tensors(args: tuple, kwargs: dict) -> list[Any]:
    """The tensors among a call's arguments, and one level into lists (``torch.cat``)."""
    import torch

    out = []
    for arg in (*args, *kwargs.values()):
        items = arg if isinstance(arg, (list, tuple)) else (arg,)
        out.extend(a for a in items if isinstance(a, torch.Tensor))
    return out


def _function_name(op: str) -> str:
    return "log_softmax" if op == "logsoftmax" else op


def _stack_depth() -> int:
    import torch

    # How many torch function modes are active on this thread: ours must be the top one
    # when we leave. torch has no public getter for the depth; this one is stable since
    # torch 2.0 and tested in tests/test_collect_losses.py against the pinned version.
    return int(torch._C._len_torch_function_stack())


_MODE_CLASS: Any = None


def _mode_class() -> type:
    """The mode class, built once torch is imported (torch stays a lazy import)."""
    global _MODE_CLASS
    if _MODE_CLASS is None:
        import torch
        from torch.overrides import TorchFunctionMode

        class LossMode(TorchFunctionMode):
            def __init__(self, watch: LossWatch) -> None:
                super().__init__()
                self.watch = watch

            def __torch_function__(self, func: Any, types: Any, args: tuple = (),
                                   kwargs: dict | None = None) -> Any:
                kwargs = kwargs or {}
                name = getattr(func, "__name__", "")
                if name in LOSS_FUNCTIONS:
                    self.watch.inspect(name, args, kwargs)
                elif name == "backward" and args:
                    self.watch.backward(args[0])
                if name in SQUASHING_INPUTS and args:
                    self.watch.squashed_input(name, args[0])
                self.watch.scan_normalised(name, args, kwargs)
                result = func(*args, **kwargs)
                if isinstance(result, torch.Tensor):
                    self.watch.note_made(name, args, result)
                return result

        _MODE_CLASS = LossMode
    return _MODE_CLASS


def _probability_targets(args: tuple, kwargs: dict) -> bool:
    """Float targets shaped like the scores: class probabilities (mixup, cutmix, soft
    labels), each batch's loss floored by its targets' entropy."""
    x = args[0] if args else kwargs.get("input")
    t = args[1] if len(args) > 1 else kwargs.get("target")
    return (getattr(t, "ndim", 0) >= 2 and bool(getattr(t, "is_floating_point", bool)())
            and tuple(getattr(t, "shape", ())) == tuple(getattr(x, "shape", ())))
