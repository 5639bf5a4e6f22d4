"""Faults in the training loop or in how the model is wired to its optimizer: gradients
never cleared, eval mode left on, dropout that eval() cannot reach, a scheduler stepped
per batch, parameters the optimizer never sees, graphs cut before the loss."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

import vizdebug as vd

from . import Fault
from ._data import digits_std, loader, tabular_std
from ._loop import acc, evaluate, finish, fit


def _digits():
    xtr, xte, ytr, yte = digits_std()
    return xtr, ytr, (torch.as_tensor(xte), torch.as_tensor(yte))


def _log_val(session: vd.Session, model: nn.Module, val, loss_fn=F.cross_entropy) -> None:
    v_loss, v_acc = evaluate(model, *val, loss_fn, acc)
    session.log(val_loss=v_loss, val_acc=v_acc)


# Source: https://github.com/wenet-e2e/wekws/pull/73 (fixes wekws#72)
#   "[fix bug] add optimizer.zero_grad()": the executor called loss.backward() and
#   optimizer.step() every batch but never zero_grad(), so every step used the sum of all
#   gradients so far (also yastrebksv/TennisCourtDetector#7: "There must be smt wrong").
def missing_zero_grad(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits()
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    train_loader = loader(xtr, ytr, 64)
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    session = vd.watch(model, loader=train_loader)
    for _ in range(8):
        for xb, yb in train_loader:
            if fixed:
                opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            session.log(loss=loss)
        _log_val(session, model, val)
    return finish(session)


# Source: https://github.com/facebookresearch/nwm/issues/16
#   "Missing opt.zero_grad() when bfloat16 is enabled causes silent gradient
#   accumulation": train_step zeroed the gradients only on the float32 path. Ported with
#   CPU bfloat16 autocast on the path that forgets it.
def zero_grad_only_on_one_path(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits()
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    train_loader = loader(xtr, ytr, 64)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    bfloat_enable = True
    session = vd.watch(model, loader=train_loader)

    def train_step(xb, yb):
        if bfloat_enable:
            if fixed:
                opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = F.cross_entropy(model(xb), yb)
        else:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    for _ in range(8):
        for xb, yb in train_loader:
            session.log(loss=train_step(xb, yb))
        _log_val(session, model, val)
    return finish(session)


class _DigitsCNN(nn.Module):
    """conv-BN-ReLU-pool twice, dropout, linear: a small CNN with train/eval behaviour."""

    def __init__(self, dropout: str = "module") -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.dropout_kind = dropout
        self.drop = nn.Dropout(0.3)
        self.head = nn.Linear(16 * 4, 10)

    def forward(self, x):
        h = self.features(x).flatten(1)
        # the report's functional dropout is always on, whatever eval() says
        functional = self.dropout_kind == "functional"
        h = F.dropout(h, 0.3, training=True) if functional else self.drop(h)
        return self.head(h)


# Source: https://github.com/wkentaro/pytorch-fcn/issues/57 (fixed by PR #56)
#   "A little bug in trainer.py": validation runs every `interval` iterations inside the
#   epoch and switches the model to eval mode; training continues in eval mode until the
#   next epoch. Symptom: "the training loss will suddenly become larger when a new epoch
#   starts"; another user "was getting unpredictable results".
def eval_mode_left_on_after_validation(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits()
    model = _DigitsCNN()
    train_loader = loader(xtr, ytr, 32)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    session = vd.watch(model, loader=train_loader)
    interval = 15
    iteration = 0
    for _ in range(5):
        model.train()
        for xb, yb in train_loader:
            if iteration % interval == 0 and iteration > 0:
                _validate_eval(session, model, val)
                if fixed:
                    model.train()
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            session.log(loss=loss)
            iteration += 1
    return finish(session)


def _validate_eval(session, model, val) -> None:
    model.eval()  # the trainer's validate(): eval mode, and it stays that way
    with torch.no_grad():
        out = model(val[0])
        session.log(val_loss=float(F.cross_entropy(out, val[1])), val_acc=acc(out, val[1]))


# Source: https://github.com/wolny/pytorch-3dunet/issues/53
#   "Need to set the model to 'eval' mode when assessing the validation data": validation
#   ran forward passes with the model still in train mode; with batch normalisation and a
#   batch size of 1 "my predictions didn't make sense". Fix: model.eval() before validating,
#   model.train() after.
def validation_in_train_mode(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits()
    model = _DigitsCNN()
    train_loader = loader(xtr, ytr, 32)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    session = vd.watch(model, loader=train_loader)
    xv, yv = val[0][:120], val[1][:120]
    for _ in range(5):
        model.train()
        for xb, yb in train_loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            session.log(loss=loss)
        if fixed:
            model.eval()
        losses, right = [], 0
        with torch.no_grad():
            for i in range(len(xv)):  # one volume at a time, as in the report
                out = model(xv[i:i + 1])
                losses.append(float(F.cross_entropy(out, yv[i:i + 1])))
                right += int(out.argmax(1).item() == yv[i].item())
        session.log(val_loss=sum(losses) / len(losses), val_acc=right / len(xv))
    return finish(session)


# Source: https://github.com/Coderx7/SimpleNet/issues/2
#   "Functional Dropout in evaluation mode": forward() called
#   F.dropout2d(out, 0.1, training=True), so "a trained network in the evaluation mode will
#   give a different output on every run for the same example". Fix: an nn.Dropout module
#   defined in __init__ (the author fixed it).
def functional_dropout_always_on(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits()
    model = _DigitsCNN("module" if fixed else "functional")
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    return fit(model, loader(xtr, ytr, 32), nn.CrossEntropyLoss(), opt, 5, val, acc)


# Source: https://github.com/pytorch/pytorch/issues/3814
#   A user asked whether scheduler.step() can go right after optimizer.step() in the batch
#   loop; apaszke: "Scheduler should step after the end of each epoch, not after every
#   iteration". With an epoch-based StepLR stepped per batch the learning rate decays
#   step_size batches at a time and is ~0 long before training ends.
def scheduler_stepped_every_batch(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits()
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    train_loader = loader(xtr, ytr, 64)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    session = vd.watch(model, loader=train_loader)
    for _ in range(10):
        for xb, yb in train_loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            if not fixed:
                scheduler.step()
            session.log(loss=loss)
        if fixed:
            scheduler.step()
        _log_val(session, model, val)
    return finish(session)


class _ListMLP(nn.Module):
    """Hidden layers built in a loop; the report kept them in a plain Python list."""

    def __init__(self, fixed: bool, n_layers: int = 2) -> None:
        super().__init__()
        hids = [nn.Linear(64, 64) for _ in range(n_layers)]
        self.hids = nn.ModuleList(hids) if fixed else hids
        self.classifier = nn.Linear(64, 10)

    def forward(self, x):
        h = x.flatten(1)
        for layer in self.hids:
            h = torch.relu(layer(h))
        return self.classifier(h)


# Source: https://github.com/pytorch/pytorch/issues/715
#   "Module: parameters are not included if the module is initialized in a list":
#   self.hids = [nn.Linear(...) ...] in __init__; the layers do not appear in
#   model.parameters(), so the optimizer never trains them. apaszke: wrap them in
#   nn.ModuleList (same bug fixed in kanezaki/pytorch-unsupervised-segmentation#6).
def layers_in_plain_list(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits()
    model = _ListMLP(fixed)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    return fit(model, loader(xtr, ytr, 64), nn.CrossEntropyLoss(), opt, 8, val, acc)


class _Tagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(),
                                     nn.Linear(64, 32), nn.ReLU())
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc(self.encoder(x))


# Source: https://github.com/zjunlp/HVPNeT/issues/5
#   "Not putting parameters into optimizer but still trainable": the optimizer's parameter
#   groups were built from the encoder's parameters, and the crf/fc head's group was never
#   appended, so "crf and fc will not be trained" (confirmed by the authors).
def head_missing_from_optimizer(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits()
    model = _Tagger()
    groups = [{"params": model.encoder.parameters(), "lr": 2e-3}]
    if fixed:
        groups.append({"params": model.fc.parameters(), "lr": 5e-3})
    opt = torch.optim.Adam(groups)
    return fit(model, loader(xtr, ytr, 64), nn.CrossEntropyLoss(), opt, 8, val, acc)


# Source: https://github.com/vllm-project/vllm/pull/18313
#   "[Model] Use sigmoid for single-label classification": a one-logit binary classifier
#   went through softmax, and "When the output has only a single class, applying softmax
#   will always give you 1". Ported to training: a one-unit head with nn.Softmax(dim=1)
#   into BCELoss always predicts 1, its loss never moves and every gradient is exactly 0.
def softmax_over_one_unit(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = tabular_std("breast_cancer")
    model = nn.Sequential(nn.Linear(30, 16), nn.ReLU(), nn.Linear(16, 1),
                          nn.Sigmoid() if fixed else nn.Softmax(dim=1))
    ytr_f, yte_f = ytr.astype("float32")[:, None], yte.astype("float32")[:, None]
    val = (torch.as_tensor(xte), torch.as_tensor(yte_f))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def prob_acc(p, y):
        return float(((p > 0.5).float() == y).float().mean())

    return fit(model, loader(xtr, ytr_f, 32), nn.BCELoss(), opt, 10, val, prob_acc)


# Source: https://github.com/isayev/ReLeaSE/issues/39
#   "Weights are not updating": the loss was rebuilt from .item() / .detach().numpy()
#   values, so "the grad for each of the layers ... comes back as none" and optimizer.step()
#   changes nothing; the maintainer: the change "detach[es] rl_loss from the computational
#   graph and there is nothing to backpropagate". (speechbrain#735 shows the usual
#   workaround for the resulting error: re-wrapping the value with requires_grad=True.)
def loss_rebuilt_from_item(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits()
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    train_loader = loader(xtr, ytr, 64)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    session = vd.watch(model, loader=train_loader)
    for _ in range(6):
        for xb, yb in train_loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            if not fixed:
                # the value moved to the CPU/numpy side, then made a tensor again so that
                # backward() stops complaining that it "does not require grad"
                loss = torch.tensor(loss.item(), requires_grad=True)
            loss.backward()
            opt.step()
            session.log(loss=loss)
        _log_val(session, model, val)
    return finish(session)





FAULTS = [
    Fault("missing-zero-grad", missing_zero_grad, "missing-zero-grad", None,
          "github.com/wenet-e2e/wekws/pull/73"),
    Fault("zero-grad-only-on-one-path", zero_grad_only_on_one_path, "missing-zero-grad", None,
          "github.com/facebookresearch/nwm/issues/16"),
    Fault("eval-mode-left-on-after-validation", eval_mode_left_on_after_validation,
          "train-eval-mode", None, "github.com/wkentaro/pytorch-fcn/issues/57"),
    # named at the model (the loop forgot its eval()), and at the module whose forward()
    # calls F.dropout (here the model itself)
    Fault("validation-in-train-mode", validation_in_train_mode, "train-eval-mode",
          "_DigitsCNN", "github.com/wolny/pytorch-3dunet/issues/53"),
    Fault("functional-dropout-always-on", functional_dropout_always_on, "train-eval-mode",
          "_DigitsCNN", "github.com/Coderx7/SimpleNet/issues/2"),
    Fault("scheduler-stepped-every-batch", scheduler_stepped_every_batch,
          "lr-schedule-collapse", None, "github.com/pytorch/pytorch/issues/3814"),
    Fault("layers-in-plain-list", layers_in_plain_list, "parameters-not-updated", None,
          "github.com/pytorch/pytorch/issues/715"),
    Fault("head-missing-from-optimizer", head_missing_from_optimizer, "parameters-not-updated",
          "fc", "github.com/zjunlp/HVPNeT/issues/5"),
    Fault("softmax-over-one-unit", softmax_over_one_unit, "zero-gradients", None,
          "github.com/vllm-project/vllm/pull/18313"),
    Fault("loss-rebuilt-from-item", loss_rebuilt_from_item, "zero-gradients", None,
          "github.com/isayev/ReLeaSE/issues/39"),
]
