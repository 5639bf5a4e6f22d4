"""Faults where what reaches the loss does not fit it: outputs squashed the wrong way,
targets of the wrong shape or outside the classes. Each program takes ``fixed``: False
runs the code as reported, True the fix the report (or its maintainers) applied."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

import vizdebug as vd

from . import Fault
from ._data import digits_std, loader, regression, tabular_std
from ._loop import acc, binary_acc, fit


def _digits_mlp(*tail: nn.Module) -> nn.Sequential:
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10), *tail)


def _digits_tensors(n_train: int | None = None):
    xtr, xte, ytr, yte = digits_std(n_train)
    return xtr, ytr, (torch.as_tensor(xte), torch.as_tensor(yte))


# Source: https://github.com/jindongwang/Deep-learning-activity-recognition/issues/10
#   "Bug in code": the model's last layer is F.softmax and its output goes to
#   nn.CrossEntropyLoss, which applies log-softmax again; the author confirmed and fixed it.
#   Symptom reported elsewhere for the same bug (discuss.pytorch.org/t/43814): the loss
#   sits near ln(10) = 2.30 and barely moves.
def softmax_before_cross_entropy(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits_tensors()
    model = _digits_mlp() if fixed else _digits_mlp(nn.Softmax(dim=1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    return fit(model, loader(xtr, ytr, 64), nn.CrossEntropyLoss(), opt, 8, val, acc)


# Source: https://github.com/Lightning-Universe/lightning-bolts/issues/654
#   "Softmax applied twice when computing loss in LogisticRegression": the loss was
#   F.nll_loss(F.log_softmax(F.softmax(linear(x)))); expected F.cross_entropy of the
#   logits. The reporter notes it "reduces value separation" and can hurt training.
def softmax_twice_functional(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits_tensors()
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 10))

    def loss_fn(logits, y):
        if fixed:
            return F.cross_entropy(logits, y)
        return F.nll_loss(F.log_softmax(F.softmax(logits, dim=1), dim=1), y)

    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return fit(model, loader(xtr, ytr, 64), loss_fn, opt, 8, val, acc)


# Source: https://github.com/speedinghzl/Pytorch-Deeplab/issues/2
#   "bug report": train.py applied log_softmax to the predictions and then called
#   F.cross_entropy, which applies log_softmax again; the maintainer agreed. (Harmless in
#   value, since log_softmax is idempotent, but it is the wrong input for the loss.)
def log_softmax_into_cross_entropy(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits_tensors()
    model = _digits_mlp() if fixed else _digits_mlp(nn.LogSoftmax(dim=1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    return fit(model, loader(xtr, ytr, 64), F.cross_entropy, opt, 8, val, acc)


# Source: https://github.com/AnubhavGupta3377/Text-Classification-Models-Pytorch/issues/9
#   "NLLLoss": the models end in softmax but train with nn.NLLLoss, which expects
#   log-probabilities; symptom: "the loss is always negative".
def softmax_into_nll_loss(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits_tensors()
    model = _digits_mlp(nn.LogSoftmax(dim=1) if fixed else nn.Softmax(dim=1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    return fit(model, loader(xtr, ytr, 64), nn.NLLLoss(), opt, 8, val, acc)


# Source: https://github.com/yudi-mars/daisyRec/pull/15
#   "Do not need sigmoid because there is sigmoid in BCEWithLogitsLoss. Otherwise loss does
#   not converge." (same bug: avBuffer/UNet3plus_pth#23 "bceloss not decrease").
def sigmoid_before_bce_with_logits(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = tabular_std("breast_cancer")
    layers: list[nn.Module] = [nn.Linear(30, 16), nn.ReLU(), nn.Linear(16, 1)]
    if not fixed:
        layers.append(nn.Sigmoid())
    model = nn.Sequential(*layers)
    ytr_f, yte_f = ytr.astype("float32")[:, None], yte.astype("float32")[:, None]
    val = (torch.as_tensor(xte), torch.as_tensor(yte_f))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    return fit(model, loader(xtr, ytr_f, 32), nn.BCEWithLogitsLoss(), opt, 10, val, binary_acc)


# Source: https://github.com/yunlongdong/FCN-pytorch/issues/7
#   "Used BCE - Loss but no sigmoid activation": the training script uses BCELoss on the
#   network's raw scores. On today's CPU builds BCELoss stops at once with "all elements of
#   input should be between 0 and 1"; older builds trained on silently. Fix: a sigmoid (or
#   BCEWithLogitsLoss on the raw scores).
def bce_loss_without_sigmoid(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = tabular_std("breast_cancer")
    layers: list[nn.Module] = [nn.Linear(30, 16), nn.ReLU(), nn.Linear(16, 1)]
    if fixed:
        layers.append(nn.Sigmoid())
    model = nn.Sequential(*layers)
    ytr_f = ytr.astype("float32")[:, None]
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    # the notebook shows BCELoss's error; the next cell asks vizdebug why
    return fit(model, loader(xtr, ytr_f, 32), nn.BCELoss(), opt, 8, crash=RuntimeError)


# Source: https://github.com/jsyoon0823/Time-series-prediction/issues/3
#   "the model only takes regression target value in [0, 1]": the regression head ends in
#   a sigmoid, so targets outside [0, 1] cannot be reached ("obviously, that won't work").
#   Fix agreed by the author: min-max normalise the targets. (The original is a TensorFlow
#   program; a sigmoid regression head fails the same way in PyTorch.)
def sigmoid_output_unbounded_targets(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = regression()
    ytr, yte = 3 * ytr + 6, 3 * yte + 6  # a quantity in its own units, roughly 0-12
    if fixed:
        lo, hi = ytr.min(), ytr.max()
        ytr, yte = (ytr - lo) / (hi - lo), (yte - lo) / (hi - lo)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1), nn.Sigmoid())
    ytr, yte = ytr[:, None], yte[:, None]
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    return fit(model, loader(xtr, ytr, 32), nn.MSELoss(), opt, 10, val)


# Source: https://github.com/timeseriesAI/tsai/issues/22
#   "Using a target size (torch.Size([16])) that is different to the input size
#   (torch.Size([16, 1]))" during a regression fit; "I suspect as a result of that my
#   model is not training". Fix: give the target the output's shape.
def mse_target_broadcast(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = regression()
    if fixed:
        ytr, yte = ytr[:, None], yte[:, None]
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    return fit(model, loader(xtr, ytr, 16), nn.MSELoss(), opt, 8, val)


# Source: https://github.com/deepset-ai/FARM/issues/229
#   "Using a target size (torch.Size([32, 1])) that is different to the input size
#   (torch.Size([32]))" in a regression head: the logits were squeezed while the labels
#   kept their (N, 1) shape; fixed in FARM#230. (Same warning with L1 in
#   lllllllllllll-llll/NSSADNN_IQA#1: "it affects the results a lot".)
def squeezed_output_target_broadcast(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = regression()
    ytr, yte = ytr[:, None], yte[:, None]

    class Head(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))

        def forward(self, x):
            out = self.net(x)
            return out if fixed else out.squeeze(-1)

    model = Head()
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    return fit(model, loader(xtr, ytr, 32), nn.L1Loss(), opt, 8, val)


# Source: https://github.com/pytorch/pytorch/issues/15666
#   "Why does Cuda NLLCriterion mandate consecutive labels starting at 0?": a CIFAR10
#   variant labelled 1..10 hit "Assertion `t >= 0 && t < n_classes` failed" with
#   CrossEntropy. On the CPU the same code stops with "IndexError: Target 10 is out of
#   bounds". Fix: labels 0..9.
def labels_start_at_one(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits_tensors()
    if not fixed:
        ytr = ytr + 1  # the dataset's own labelling: 1..10
    model = _digits_mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    # the notebook shows the traceback; the next cell asks vizdebug why
    return fit(model, loader(xtr, ytr, 64), F.cross_entropy, opt, 6, val, acc,
               crash=IndexError)


# Source: https://github.com/milesial/Pytorch-UNet/issues/291
#   "IndexError: Target 192 is out of bounds" training a segmentation net with
#   CrossEntropyLoss; maintainer: "check that your masks are loaded with class indices and
#   not with raw greyscale value". Ported: 8x8 images, masks saved as 0/255 greyscale.
def greyscale_mask_as_class_ids(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    blobs = (torch.rand(256, 1, 8, 8, generator=g) > 0.6).float()
    images = blobs + 0.3 * torch.randn(256, 1, 8, 8, generator=g)
    masks = (blobs[:, 0] * 255).long()  # the mask file as read: background 0, object 255
    if fixed:
        masks = (masks > 127).long()  # class indices 0/1
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 2, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    # the notebook shows the traceback; the next cell asks vizdebug why
    return fit(model, loader(images, masks, 32), F.cross_entropy, opt, 6, crash=IndexError)


FAULTS = [
    Fault("softmax-before-cross-entropy", softmax_before_cross_entropy,
          "loss-output-mismatch", None,
          "github.com/jindongwang/Deep-learning-activity-recognition/issues/10"),
    Fault("softmax-twice-functional", softmax_twice_functional, "loss-output-mismatch", None,
          "github.com/Lightning-Universe/lightning-bolts/issues/654"),
    Fault("log-softmax-into-cross-entropy", log_softmax_into_cross_entropy,
          "loss-output-mismatch", None, "github.com/speedinghzl/Pytorch-Deeplab/issues/2"),
    Fault("softmax-into-nll-loss", softmax_into_nll_loss, "loss-output-mismatch", None,
          "github.com/AnubhavGupta3377/Text-Classification-Models-Pytorch/issues/9"),
    Fault("sigmoid-before-bce-with-logits", sigmoid_before_bce_with_logits,
          "loss-output-mismatch", None, "github.com/yudi-mars/daisyRec/pull/15"),
    Fault("bce-loss-without-sigmoid", bce_loss_without_sigmoid, "loss-output-mismatch", None,
          "github.com/yunlongdong/FCN-pytorch/issues/7"),
    Fault("sigmoid-output-unbounded-targets", sigmoid_output_unbounded_targets,
          "loss-output-mismatch", None,
          "github.com/jsyoon0823/Time-series-prediction/issues/3"),
    Fault("mse-target-broadcast", mse_target_broadcast, "target-shape-broadcast", None,
          "github.com/timeseriesAI/tsai/issues/22"),
    Fault("squeezed-output-target-broadcast", squeezed_output_target_broadcast,
          "target-shape-broadcast", None, "github.com/deepset-ai/FARM/issues/229"),
    Fault("labels-start-at-one", labels_start_at_one, "labels-out-of-range", None,
          "github.com/pytorch/pytorch/issues/15666"),
    Fault("greyscale-mask-as-class-ids", greyscale_mask_as_class_ids, "labels-out-of-range",
          None, "github.com/milesial/Pytorch-UNet/issues/291"),
]
