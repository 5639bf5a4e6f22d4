"""Held-out real faults, second round: the classic failures in clothes no other entry wears
(a TorchMoji-like text LSTM whose logits are ``.data``, PredRNN's decoupling loss rebuilt
as a new tensor, a YOLO class loss on sigmoids, a metrics autoencoder's ``view`` in place
of a transpose, a text-to-image model's loss counting padding, a dialogue seq2seq left in
eval mode, a one-cycle schedule stepped per epoch, DLRM's bias initialisation and an
encoder-GAN's discriminator without ``zero_grad``). Each from a public report that is not
the source of any other entry, with its fixed twin; ``fixed=False`` runs the code as
reported, ``True`` the fix. They were written and run before any rule was changed for them
(the figure is in README.md); the loop faults are in ``heldout_loop2.py``."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

import vizdebug as vd

from . import Fault
from ._loop import acc, finish, fit
from .heldout_faults import _token_docs
from .heldout_loop2 import LOOP_FAULTS


def _loader(*arrays, batch_size: int = 32, shuffle: bool = True) -> DataLoader:
    ds = TensorDataset(*(torch.as_tensor(a) for a in arrays))
    return DataLoader(ds, batch_size=batch_size, shuffle=shuffle,
                      generator=torch.Generator().manual_seed(0))


# == a text classifier whose logits are returned as .data ===================================
class _MojiLike(nn.Module):
    """TorchMoji's shape, shrunk: embedding, a bidirectional LSTM, max-pooling, a linear head;
    ``return_tensor`` returns ``outputs.data`` as model_def.py did."""

    def __init__(self, return_data: bool) -> None:
        super().__init__()
        self.return_data = return_data
        self.embed = nn.Embedding(40, 16)
        self.lstm = nn.LSTM(16, 24, batch_first=True, bidirectional=True)
        self.head = nn.Linear(48, 2)

    def forward(self, tokens):
        h, _ = self.lstm(self.embed(tokens))
        out = self.head(h.amax(dim=1))
        if self.return_data:
            out = out.data  # model_def.py: `if return_tensor: outputs = outputs.data`
        return out


# Source: https://github.com/huggingface/torchMoji/issues/21
#   "loss don't go down when finetune": finetune.py raised "element 0 of tensors does not
#   require grad" unless `loss = Variable(loss, requires_grad=True)` was added, and then
#   "Each epochs loss almost same" (val acc 62.54 every epoch). A commenter found the root:
#   model_def.py's `if return_tensor: outputs = outputs.data`; "I removed those lines of code
#   then the loss starts improving". Ported: a BiLSTM text classifier on a bigram task.
def logits_returned_as_data(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    x, y = _token_docs(768, 24, 40, seed=0)
    vx, vy = (torch.as_tensor(a) for a in _token_docs(192, 24, 40, seed=1))
    model = _MojiLike(return_data=not fixed)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    train = _loader(x, y)
    session = vd.watch(model, loader=train)
    for _epoch in range(4):
        model.train()
        for xb, yb in train:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            if not fixed:
                loss = torch.autograd.Variable(loss, requires_grad=True)  # the reporter's line
            loss.backward()
            opt.step()
            session.log(loss=loss)
        model.eval()
        with torch.no_grad():
            out = model(vx)
        session.log(val_loss=float(F.cross_entropy(out, vy)), val_acc=acc(out, vy))
    return finish(session)


# == an auxiliary loss rebuilt as a new tensor ==============================================
class _DecoupledRNN(nn.Module):
    """PredRNN-V2's memory decoupling, on 1-D frames: two memories (c, m) updated per step,
    an ``adapter`` applied to both increments, whose cosine similarity is the decoupling
    loss; the adapter is trained by that loss only."""

    def __init__(self, width: int = 8, hidden: int = 24) -> None:
        super().__init__()
        self.cell_c = nn.Linear(width + hidden, hidden)
        self.cell_m = nn.Linear(width + hidden, hidden)
        self.adapter = nn.Linear(hidden, hidden, bias=False)
        self.out = nn.Linear(2 * hidden, width)
        self.hidden = hidden

    def forward(self, seq):
        c = m = seq.new_zeros(len(seq), self.hidden)
        preds, decouple = [], []
        for t in range(seq.shape[1] - 1):
            x = seq[:, t]
            dc = torch.tanh(self.cell_c(torch.cat([x, c], 1)))
            dm = torch.tanh(self.cell_m(torch.cat([x, m], 1)))
            c, m = 0.5 * c + dc, 0.5 * m + dm
            sim = F.cosine_similarity(self.adapter(dc), self.adapter(dm), dim=1)
            decouple.append(sim.abs().mean())
            preds.append(self.out(torch.cat([c, m], 1)))
        return torch.stack(preds, 1), decouple


def _waves(n: int, length: int, width: int, seed: int) -> np.ndarray:
    """Frames of ``width`` travelling sine waves, one speed and phase per sequence."""
    rng = np.random.default_rng(seed)
    t = np.arange(length)[None, :, None]
    pos = np.arange(width)[None, None, :]
    speed = rng.uniform(0.2, 0.6, (n, 1, 1))
    phase = rng.uniform(0, 2 * np.pi, (n, 1, 1))
    x = np.sin(speed * t + 0.7 * pos + phase) + rng.normal(0, 0.05, (n, length, width))
    return x.astype(np.float32)


# Source: https://github.com/thuml/predrnn-pytorch/issues/11
#   "question about decouple loss": "when I print decouple loss at core/train.py, I found
#   the requires_grad of decouple loss is False! Does this mean that decouple loss does not
#   play any role in backpropagation?"; the author: "this is a typo ... change
#   'predrnn_memory_decoupling.py' line 113 to 'decouple_loss =
#   torch.mean(torch.stack(decouple_loss, dim=0))'". Ported: next-frame prediction of
#   travelling waves with the decoupling adapter; the typo builds the mean with torch.tensor.
def decouple_loss_rebuilt_as_tensor(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    seqs = _waves(512, 10, 8, seed=0)
    model = _DecoupledRNN()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    train = _loader(seqs, batch_size=32)
    session = vd.watch(model, loader=train)
    for _epoch in range(4):
        for (seq,) in train:
            pred, decouple = model(seq)
            if fixed:
                decouple_loss = torch.mean(torch.stack(decouple, dim=0))
            else:
                decouple_loss = torch.mean(torch.tensor(decouple))  # the typo
            loss = F.mse_loss(pred, seq[:, 1:]) + 0.1 * decouple_loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            session.log(loss=loss)
    return finish(session)


# == a detector's class loss on sigmoid scores ==============================================
def _blobs(n: int, seed: int, grid: int = 4, cell: int = 4, classes: int = 3):
    """Images of ``grid`` x ``grid`` cells; 1-3 cells hold an object of one of ``classes``
    kinds (a filled square, a hollow one, a bar). Targets per cell: objectness and the class
    as a one-hot row, as YOLOv3's build_targets gives them."""
    rng = np.random.default_rng(seed)
    side = grid * cell
    img = rng.normal(0, 0.2, (n, 1, side, side)).astype(np.float32)
    obj = np.zeros((n, grid * grid), np.float32)
    tcls = np.zeros((n, grid * grid, classes), np.float32)
    for i in range(n):
        for c in rng.choice(grid * grid, rng.integers(1, 4), replace=False):
            k = rng.integers(classes)
            r, q = divmod(int(c), grid)
            patch = np.zeros((cell, cell), np.float32)
            if k == 0:
                patch[:] = 1.0
            elif k == 1:
                patch[[0, -1], :] = patch[:, [0, -1]] = 1.0
            else:
                patch[:, cell // 2 - 1:cell // 2 + 1] = 1.0
            img[i, 0, r * cell:(r + 1) * cell, q * cell:(q + 1) * cell] += patch
            obj[i, c], tcls[i, c, k] = 1.0, 1.0
    return img, obj, tcls


class _TinyYolo(nn.Module):
    def __init__(self, classes: int = 3) -> None:
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                                      nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                                      nn.ReLU(), nn.MaxPool2d(2))
        self.pred = nn.Conv2d(32, 1 + classes, 1)

    def forward(self, x):
        p = self.pred(self.backbone(x))  # (N, 1 + C, 4, 4)
        return p.flatten(2).transpose(1, 2)  # (N, cells, 1 + C)


# Source: https://github.com/eriklindernoren/PyTorch-YOLOv3/issues/108
#   "Some problems with loss": `pred_cls = torch.sigmoid(prediction[..., 5:])` and
#   `loss_cls = self.ce_loss(pred_cls[mask], torch.argmax(tcls[mask], 1))`: "Using sigmoid
#   in pred_cls, may make the loss_cls never be optimized to zero ... Because
#   nn.CrossEntropyLoss() combines nn.LogSoftmax() and nn.NLLLoss()"; the fix given:
#   `pred_cls = prediction[..., 5:]`, "sigmoid is not need for nn.CrossEntropyLoss()".
#   Ported: a grid detector of three object kinds, objectness BCE plus the class loss.
def yolo_sigmoid_class_scores(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    img, obj, tcls = _blobs(512, seed=0)
    model = _TinyYolo()
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    train = _loader(img, obj, tcls, batch_size=32)
    ce = nn.CrossEntropyLoss()
    session = vd.watch(model, loader=train)
    for _epoch in range(4):
        for xb, ob, tc in train:
            p = model(xb)
            pred_cls = p[..., 1:] if fixed else torch.sigmoid(p[..., 1:])
            mask = ob.bool()
            loss_obj = F.binary_cross_entropy_with_logits(p[..., 0], ob)
            loss_cls = ce(pred_cls[mask], torch.argmax(tc[mask], 1))
            loss = loss_obj + loss_cls
            opt.zero_grad()
            loss.backward()
            opt.step()
            session.log(loss=loss, loss_cls=loss_cls)
    return finish(session)


# == a Conv1d autoencoder fed a view instead of a transpose =================================
class _ConvAE(nn.Module):
    """numalogic's Conv1dAE shape: windows (batch, seq_len, n_features) in and out."""

    def __init__(self, seq_len: int, n_features: int, swap: bool) -> None:
        super().__init__()
        self.seq_len, self.n_features, self.swap = seq_len, n_features, swap
        self.encoder = nn.Sequential(nn.Conv1d(n_features, 16, 3, padding=1), nn.ReLU(),
                                     nn.Conv1d(16, 4, 3, padding=1), nn.ReLU())
        self.decoder = nn.Sequential(nn.Conv1d(4, 16, 3, padding=1), nn.ReLU(),
                                     nn.Conv1d(16, n_features, 3, padding=1))

    def forward(self, batch):
        if self.swap:
            x = torch.swapdims(batch, 1, 2)  # the fix
        else:
            x = batch.view(-1, self.n_features, self.seq_len)  # the reported line
        out = self.decoder(self.encoder(x))
        if self.swap:
            return torch.swapdims(out, 1, 2)
        return out.view(-1, self.seq_len, self.n_features)


def _metrics(n: int, length: int, seed: int) -> np.ndarray:
    """Windows of three service metrics (error %, CPU, memory): smooth, correlated curves."""
    rng = np.random.default_rng(seed)
    t = np.arange(length)[None, :]
    base = rng.uniform(0, 2 * np.pi, (n, 1))
    freq = rng.uniform(0.15, 0.4, (n, 1))
    cpu = np.sin(freq * t + base)
    mem = 0.6 * np.sin(freq * t + base - 0.8) + 0.3
    err = 0.5 * np.maximum(cpu, 0) ** 2
    x = np.stack([err, cpu, mem], axis=-1) + rng.normal(0, 0.05, (n, length, 3))
    return x.astype(np.float32)


# Source: https://github.com/numaproj/numalogic/pull/240
#   "fix: tensor dimension swap instead of view change": Conv1dAE's forward did
#   `batch = batch.view(-1, self.n_features, self.seq_len)`, so "each feature vector sent to
#   each channel carries datapoints interleaved from different metrics"; the fix:
#   `batch = torch.swapdims(batch, 1, 2)`, "because the convolutional operation requires the
#   tensor to be aligned in a particular dimensional consistency". Ported: windows of three
#   correlated metrics, reconstructed.
def conv_autoencoder_view_not_swap(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    x = _metrics(640, 24, seed=0)
    vx = torch.as_tensor(_metrics(160, 24, seed=1))
    model = _ConvAE(24, 3, swap=fixed)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    return fit(model, _loader(x, x, batch_size=32), nn.MSELoss(), opt, 5, (vx, vx))


# == padding tokens counted in the loss =====================================================
def _captions(n: int, length: int, vocab: int, seed: int) -> np.ndarray:
    """Token sequences of 4-12 tokens padded with 0 to ``length``: each caption counts up
    from a random start by a random stride (mod the vocabulary, ids 1..vocab-1)."""
    rng = np.random.default_rng(seed)
    out = np.zeros((n, length), np.int64)
    for i in range(n):
        size = rng.integers(4, 13)
        start, stride = rng.integers(1, vocab), rng.integers(1, 4)
        out[i, :size] = (start + stride * np.arange(size)) % (vocab - 1) + 1
    return out


class _CaptionLM(nn.Module):
    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 32)
        self.gru = nn.GRU(32, 64, batch_first=True)
        self.to_logits = nn.Linear(64, vocab)

    def forward(self, tokens):
        h, _ = self.gru(self.embed(tokens))
        return self.to_logits(h)  # (batch, seq, vocab)


# Source: https://github.com/lucidrains/DALLE-pytorch/issues/57
#   "ignore_index defined but not used": "I assume the purpose is to ignore the padding
#   from the text ... instead of using `F.cross_entropy(rearrange(logits, 'b n c -> b c
#   n'), labels)` we have to define ... CrossEntropyLoss(..., ignore_index=self.ignore_index)
#   ... the default value of ignore_index should be 0. Since thats the pad_id of the default
#   tokenizer"; the author addressed it in PR #58. Ported: a GRU language model over captions
#   padded with 0 to 24 tokens (two thirds of the positions are padding).
def caption_loss_counts_padding(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    vocab = 48
    text = _captions(768, 24, vocab, seed=0)
    model = _CaptionLM(vocab)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    train = _loader(text, batch_size=32)
    session = vd.watch(model, loader=train)
    for _epoch in range(4):
        for (tokens,) in train:
            inp, labels = tokens[:, :-1], tokens[:, 1:]
            logits = model(inp)
            if fixed:
                loss = F.cross_entropy(logits.transpose(1, 2), labels, ignore_index=0)
            else:
                loss = F.cross_entropy(logits.transpose(1, 2), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            session.log(loss=loss)
    return finish(session)


FAULTS: list[Fault] = [
    Fault("heldout2/logits-returned-as-data", logits_returned_as_data, "zero-gradients",
          None, "github.com/huggingface/torchMoji/issues/21"),
    Fault("heldout2/decouple-loss-rebuilt-as-tensor", decouple_loss_rebuilt_as_tensor,
          "graph-cut", "adapter", "github.com/thuml/predrnn-pytorch/issues/11"),
    Fault("heldout2/yolo-sigmoid-class-scores", yolo_sigmoid_class_scores,
          "loss-output-mismatch", None, "github.com/eriklindernoren/PyTorch-YOLOv3/issues/108"),
    Fault("heldout2/conv-autoencoder-view-not-swap", conv_autoencoder_view_not_swap,
          "layout-channels-last", "encoder", "github.com/numaproj/numalogic/pull/240"),
    Fault("heldout2/caption-loss-counts-padding", caption_loss_counts_padding,
          "padding-in-loss", None, "github.com/lucidrains/DALLE-pytorch/issues/57"),
    *LOOP_FAULTS,
]
