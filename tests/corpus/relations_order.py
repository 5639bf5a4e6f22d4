"""Faults that are relations: axis order (an RNN with batch_first=False fed (batch, time,
feature); view/reshape instead of permute; a transformer fed (batch, seq, embed) when it
expects (seq, batch, embed)). Each from a public report, with its fixed twin;
``fixed=False`` runs the code as reported, ``True`` the fix.

The relation vizdebug measures is between what the module received and what the program
feeds it: the DataLoader's batch size against the axis the module reads as the batch, and
the first convolution's input against the model input reshaped versus permuted."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

import vizdebug as vd

from . import Fault
from ._data import digits_std, loader, tabular_std
from ._loop import acc, fit


def _digits():
    xtr, xte, ytr, yte = digits_std()
    return xtr, ytr, (torch.as_tensor(xte), torch.as_tensor(yte))


# -- (a) recurrent layers fed (batch, time, feature) with batch_first=False ----------------
class _RowLSTM(nn.Module):
    """The tutorial's RNN: each image row is a time step, the last step's output classifies."""

    def __init__(self, batch_first: bool) -> None:
        super().__init__()
        self.lstm = nn.LSTM(8, 32, batch_first=batch_first)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        out, _ = self.lstm(x.reshape(-1, 8, 8))  # (batch, rows, columns)
        return self.fc(out[:, -1, :])


# Source: https://github.com/yunjey/pytorch-tutorial/issues/196
#   "LSTM question": the reporter changed the tutorial's recurrent_neural_network/main.py
#   from batch_first=True to False and kept feeding images.reshape(-1, 28, 28) (batch,
#   rows, columns); "both loss (about 2) and accuracy (about 11.35%) is not good". The fix
#   is the tutorial's own: batch_first=True (or transpose the input to (rows, batch, cols)).
#   Ported: digits (8x8) rows as the sequence, Adam at the tutorial's 0.01.
def lstm_rows_without_batch_first(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits()
    model = _RowLSTM(batch_first=fixed)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    return fit(model, loader(xtr, ytr, 64), nn.CrossEntropyLoss(), opt, 4, val, acc)


def _speech(n: int = 640, length: int = 16, seed: int = 0):
    """Noisy two-channel oscillations (a speech-feature stand-in); the target is the rate."""
    rng = np.random.default_rng(seed)
    rate = rng.uniform(0.2, 1.0, size=n)
    phase = rng.uniform(0, 2 * np.pi, size=n)
    t = rate[:, None] * np.arange(length)[None] + phase[:, None]
    x = np.stack([np.sin(t), np.cos(t)], -1) + rng.normal(0, 0.1, (n, length, 2))
    y = (rate - 0.6) / 0.23
    return x.astype(np.float32), y[:, None].astype(np.float32)


class _SpeechEncoder(nn.Module):
    def __init__(self, batch_first: bool) -> None:
        super().__init__()
        self.gru = nn.GRU(2, 32, batch_first=batch_first)
        self.out = nn.Linear(32, 1)

    def forward(self, speech):  # (batch, time, features)
        encoded, _ = self.gru(speech)
        return self.out(encoded[:, -1])


# Source: https://github.com/Svito-zar/gesticulator/issues/62
#   "GRU layer should have the batch_first=True flag": the speech encoder's nn.GRU was
#   built with the default batch_first=False while curr_speech is (batch, time, features);
#   the reporter: "the model was not converging correctly for my custom dataset without the
#   batch_first argument. After doing the necessary changes, its performing much better";
#   the author agreed. Ported: a GRU regressor on two-channel oscillations, MSE.
def gru_encoder_without_batch_first(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    x, y = _speech()
    xtr, ytr, val = x[:512], y[:512], (torch.as_tensor(x[512:]), torch.as_tensor(y[512:]))
    model = _SpeechEncoder(batch_first=fixed)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    return fit(model, loader(xtr, ytr, 32), nn.MSELoss(), opt, 5, val)


def _tokens(n: int = 768, length: int = 12, vocab: int = 24, seed: int = 0):
    """Token sequences whose label says whether 'positive' tokens outnumber 'negative' ones."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, vocab, size=(n, length))
    score = (x < vocab // 3).sum(1) - (x >= 2 * vocab // 3).sum(1)
    keep = score != 0
    return x[keep].astype(np.int64), (score[keep] > 0).astype(np.int64)


class _GloveEncoder(nn.Module):
    """An embedding under an LSTM encoder, its outputs averaged over time (CoVe-like)."""

    def __init__(self, batch_first: bool, vocab: int = 24) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 16)
        self.rnn = nn.LSTM(16, 24, bidirectional=True, batch_first=batch_first)
        self.head = nn.Linear(48, 2)

    def forward(self, tokens):  # (batch, time)
        outputs, _ = self.rnn(self.embed(tokens))
        return self.head(outputs.mean(1))


# Source: https://github.com/salesforce/cove/issues/10
#   "batch_first should be True when initializing the LSTM?": cove/encoder.py built its
#   nn.LSTM with the default batch_first=False while the inputs it was given and the outputs
#   it unpacked were (batch, time, 300); "Will this cause inconsistency and generate wrong
#   CoVe vectors?"; the maintainer changed the LSTM to batch_first=True (3d57c2f). Ported:
#   an embedding + bidirectional LSTM sentence classifier on token batches.
def lstm_token_encoder_without_batch_first(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    x, y = _tokens()
    cut = int(len(x) * 0.8)
    val = (torch.as_tensor(x[cut:]), torch.as_tensor(y[cut:]))
    model = _GloveEncoder(batch_first=fixed)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    return fit(model, loader(x[:cut], y[:cut], 32), F.cross_entropy, opt, 4, val, acc)


# -- (c) transformers fed (batch, seq, embed) when they expect (seq, batch, embed) --------
class _TokenTransformer(nn.Module):
    def __init__(self, batch_first: bool, vocab: int = 24, length: int = 12) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 16)
        self.position = nn.Parameter(torch.randn(length, 16) * 0.1)
        layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0,
                                           batch_first=batch_first)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.head = nn.Linear(16, 2)

    def forward(self, tokens):  # (batch, seq)
        h = self.encoder(self.embed(tokens) + self.position)
        return self.head(h.mean(1))


# Source: https://github.com/Exorust/TorchLeet/issues/5
#   "In h3, we should pass batch_first=True to TransformerEncoderLayer": the exercise feeds
#   (batch, seq, embed) and "Torch by default uses batch_first=False for the
#   TransformerEncoderLayer, resulting in high training loss and test error" (curves
#   attached, before and after); the maintainer: "Totally valid". Fix: batch_first=True.
#   Ported: a one-layer encoder classifying token sequences.
def transformer_encoder_batch_first_default(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    x, y = _tokens(seed=1)
    cut = int(len(x) * 0.8)
    val = (torch.as_tensor(x[cut:]), torch.as_tensor(y[cut:]))
    model = _TokenTransformer(batch_first=fixed)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    return fit(model, loader(x[:cut], y[:cut], 32), F.cross_entropy, opt, 4, val, acc)


class _FieldTransformer(nn.Module):
    """Each column of a table is a token (its value times a learned field vector)."""

    def __init__(self, transpose: bool, fields: int = 30, width: int = 8) -> None:
        super().__init__()
        self.field = nn.Parameter(torch.randn(fields, width) * 0.3)
        self.bias = nn.Parameter(torch.zeros(fields, width))
        layer = nn.TransformerEncoderLayer(width, 2, dim_feedforward=16, dropout=0.0)
        self.transformer_encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.head = nn.Linear(fields * width, 2)
        self.transpose = transpose

    def forward(self, rows):  # (batch, fields)
        tokens = rows.unsqueeze(-1) * self.field + self.bias  # (batch, fields, width)
        if self.transpose:  # the fix: (fields, batch, width) in, and back
            h = self.transformer_encoder(tokens.transpose(0, 1)).transpose(0, 1)
        else:
            h = self.transformer_encoder(tokens)
        return self.head(h.reshape(len(rows), -1))


# Source: https://github.com/IBM/TabFormer/pull/14
#   "bug fix: set the correct ordering of dimensions in the input tensor":
#   self.transformer_encoder "expects the batch size to be in the second dimension of the
#   input tensor, however the current implementation places the batch size in the first
#   dimension which causes an incorrect computation during multiheaded attention"; merged
#   fix: transpose to (fields, batch, embed) before the encoder and back after. Ported: the
#   30 columns of the breast-cancer table as field tokens.
def tabular_transformer_batch_on_first_axis(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = tabular_std("breast_cancer")
    model = _FieldTransformer(transpose=fixed)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    return fit(model, loader(xtr, ytr, 32), F.cross_entropy, opt, 5, val, acc)


class _PatchAttention(nn.Module):
    """Image patches as tokens, one self-attention layer, mean-pooled."""

    def __init__(self, batch_first: bool) -> None:
        super().__init__()
        self.embed = nn.Linear(4, 16)
        self.position = nn.Parameter(torch.randn(16, 16) * 0.1)
        self.attn = nn.MultiheadAttention(16, 2, batch_first=batch_first)
        self.norm = nn.LayerNorm(16)
        self.head = nn.Linear(16, 10)

    def forward(self, images):  # (batch, 1, 8, 8) -> 16 patches of 2x2
        patches = images.reshape(-1, 4, 2, 4, 2).permute(0, 1, 3, 2, 4).reshape(-1, 16, 4)
        tokens = self.embed(patches) + self.position
        attended, _ = self.attn(tokens, tokens, tokens)
        return self.head(self.norm(tokens + attended).mean(1))


# Source: https://github.com/om-ai-lab/OmDet/issues/19
#   "Batched MultiHeadAttention": the encoder's nn.MultiheadAttention was built with the
#   default batch_first=False while "the inputs of the self_attn layer are of the shape
#   (batch_size, ...)", which "causes inconsistencies when using the model for batch
#   inference"; the authors agreed and changed it to batch_first=True. Ported: patch tokens
#   of the digits through one self-attention layer.
def multihead_attention_not_batch_first(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits()
    model = _PatchAttention(batch_first=fixed)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    return fit(model, loader(xtr, ytr, 64), F.cross_entropy, opt, 4, val, acc)


# -- (b) view/reshape instead of permute before the first convolution --------------------
def _camera(n: int = 640, seed: int = 0):
    """Colour 'camera frames' stored (height, width, channel) with a blob whose centre
    (row, column) is the target, as a policy would regress a position from a frame."""
    rng = np.random.default_rng(seed)
    centre = rng.uniform(1.5, 6.5, size=(n, 2))
    grid = np.arange(8)
    d2 = (grid[None, :, None] - centre[:, 0, None, None]) ** 2 + \
        (grid[None, None, :] - centre[:, 1, None, None]) ** 2
    blob = np.exp(-d2 / 2.0)
    colour = rng.uniform(0.5, 1.0, size=(n, 1, 1, 3))
    frames = blob[..., None] * colour + rng.normal(0, 0.05, (n, 8, 8, 3))
    return frames.astype(np.float32), ((centre - 4) / 1.5).astype(np.float32)


class _CameraPolicy(nn.Module):
    def __init__(self, permute: bool) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Flatten(),
                                     nn.Linear(8 * 64, 32), nn.ReLU(), nn.Linear(32, 2))
        self.permute = permute

    def forward(self, img):  # (batch, height, width, channels)
        b, h, w, c = img.shape
        img = img.permute(0, 3, 1, 2) if self.permute else img.reshape(b, c, h, w)
        return self.encoder(img)


# Source: https://github.com/Selen-Suyue/DensePolicy2D/issues/3
#   "a mirror question about inference code": policy.py turned the b x h x w x c camera
#   images into b x c x h x w with reshape before the convolutional encoder; the reporter
#   shows that reshape interleaves r, g, b values into "a pretend image" and that
#   img.permute(0, 3, 1, 2) is needed; the author: "Got it! I will update my code."
#   Ported: a conv policy regressing a blob's position from colour frames, MSE.
def camera_frames_reshaped_not_permuted(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    x, y = _camera()
    val = (torch.as_tensor(x[512:]), torch.as_tensor(y[512:]))
    model = _CameraPolicy(permute=fixed)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    return fit(model, loader(x[:512], y[:512], 32), nn.MSELoss(), opt, 5, val)


def _clips(n: int = 512, frames: int = 4, seed: int = 0):
    """Colour clips (channels, time, height, width) of a dot moving left (0) or right (1)."""
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, size=n)
    start = rng.uniform(2, 5, size=n)
    row = rng.uniform(1, 6, size=n)
    step = np.where(label == 1, 0.8, -0.8)
    grid = np.arange(8)
    col = start[:, None] + step[:, None] * np.arange(frames)[None]  # (n, t)
    d2 = (grid[None, None, :, None] - row[:, None, None, None]) ** 2 + \
        (grid[None, None, None, :] - col[:, :, None, None]) ** 2
    dot = np.exp(-d2 / 1.5)  # (n, t, h, w)
    tint = rng.uniform(0.4, 1.0, size=(n, 3, 1, 1, 1))
    clips = dot[:, None] * tint + rng.normal(0, 0.05, (n, 3, frames, 8, 8))
    return clips.astype(np.float32), label.astype(np.int64)


class _FrameConv(nn.Module):
    """A 2-d convolution on every frame, then a linear layer over the frames' features."""

    def __init__(self, permute: bool, frames: int = 4) -> None:
        super().__init__()
        self.frame_conv = nn.Conv2d(3, 6, 3, padding=1)
        self.frame_fc = nn.Linear(6 * 64, 16)
        self.head = nn.Linear(frames * 16, 2)
        self.permute = permute

    def forward(self, clip):  # (batch, channels, time, height, width)
        b, c, t, h, w = clip.shape
        if self.permute:  # the fix: time next to the batch first
            clip = clip.permute(0, 2, 1, 3, 4).contiguous()
        frames = clip.view(b * t, c, h, w)
        feats = F.relu(self.frame_fc(F.relu(self.frame_conv(frames)).flatten(1)))
        return self.head(feats.view(b, t * 16))


# Source: https://github.com/proceduralia/pytorch-conv2_1d/issues/1
#   "the input dim problem?": Conv2_1d.forward did b, c, t, d1, d2 = x.size(); x =
#   x.view(b*t, c, d1, d2) before its Conv2d; "here should not we permute the dim first?
#   x = x.permute(0, 2, 1, 3, 4) ... otherwise, the meaning of x is not the conv2d needed";
#   the author: "I updated the code. Thank you!". Ported: colour clips of a moving dot,
#   a per-frame convolution, left/right classification.
def clip_frames_viewed_without_permute(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    x, y = _clips()
    val = (torch.as_tensor(x[416:]), torch.as_tensor(y[416:]))
    train = DataLoader(TensorDataset(torch.as_tensor(x[:416]), torch.as_tensor(y[:416])),
                       batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(0))
    model = _FrameConv(permute=fixed)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    return fit(model, train, F.cross_entropy, opt, 4, val, acc)


FAULTS = [
    Fault("lstm-rows-without-batch-first", lstm_rows_without_batch_first, "axis-order",
          "lstm", "github.com/yunjey/pytorch-tutorial/issues/196"),
    Fault("gru-encoder-without-batch-first", gru_encoder_without_batch_first, "axis-order",
          "gru", "github.com/Svito-zar/gesticulator/issues/62"),
    Fault("lstm-token-encoder-without-batch-first", lstm_token_encoder_without_batch_first,
          "axis-order", "rnn", "github.com/salesforce/cove/issues/10"),
    Fault("transformer-encoder-batch-first-default", transformer_encoder_batch_first_default,
          "axis-order", "encoder", "github.com/Exorust/TorchLeet/issues/5"),
    Fault("tabular-transformer-batch-on-first-axis", tabular_transformer_batch_on_first_axis,
          "axis-order", "transformer_encoder", "github.com/IBM/TabFormer/pull/14"),
    Fault("multihead-attention-not-batch-first", multihead_attention_not_batch_first,
          "axis-order", "attn", "github.com/om-ai-lab/OmDet/issues/19"),
    Fault("camera-frames-reshaped-not-permuted", camera_frames_reshaped_not_permuted,
          "layout-channels-last", "encoder.0", "github.com/Selen-Suyue/DensePolicy2D/issues/3"),
    Fault("clip-frames-viewed-without-permute", clip_frames_viewed_without_permute,
          "axis-order", "frame_conv", "github.com/proceduralia/pytorch-conv2_1d/issues/1"),
]
