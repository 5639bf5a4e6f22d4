"""Working public programs ported small (part d), written as a held-out test: none of
them was seen while vizdebug's rules were calibrated (see the README's "Held out"). Each is
cited with its repository, path and commit (or URL) and keeps its own loop idioms;
vizdebug must give none of them a warning or an error."""

from __future__ import annotations

import math
import random
from itertools import count

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset, TensorDataset, random_split

import vizdebug as vd

from . import Control
from ._data import digits, digits_std
from ._loop import LAST_METRICS, finish, last_values


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _digits01():
    """Digits scaled to [0, 1] the way ``transforms.ToTensor()`` scales MNIST."""
    xtr, xte, ytr, yte = digits()
    return xtr / 16.0, xte / 16.0, ytr, yte


# --------------------------------------------------------------------------------------
# pytorch/examples regression/main.py
# --------------------------------------------------------------------------------------


def examples_regression_poly() -> vd.Findings:
    """pytorch/examples ``regression/main.py`` (1877b870): a bare ``nn.Linear(4, 1)``
    fitting a degree-4 polynomial from fresh random batches of 32 (``get_batch``, no
    loader), ``fc.zero_grad()`` on the module, ``F.smooth_l1_loss``, the update written by
    hand (``param -= 0.1 * grad``; under ``torch.no_grad()`` as torch now requires for an
    in-place step on a leaf), the loop ``for batch_idx in count(1)`` stopped once the
    loss's ``.item()`` is under 1e-3 (capped at 3000). Measured: loss 11.6 -> 8.4e-4,
    stopped after 830 batches."""
    torch.manual_seed(0)
    degree = 4
    w_target = torch.randn(degree, 1) * 5
    b_target = torch.randn(1) * 5

    def make_features(x):
        x = x.unsqueeze(1)
        return torch.cat([x ** i for i in range(1, degree + 1)], 1)

    def get_batch(batch_size=32):
        x = make_features(torch.randn(batch_size))
        return x, x.mm(w_target) + b_target.item()

    fc = nn.Linear(w_target.size(0), 1)
    session = vd.watch(fc)
    for batch_idx in count(1):
        batch_x, batch_y = get_batch()
        fc.zero_grad()
        output = F.smooth_l1_loss(fc(batch_x), batch_y)
        loss = output.item()
        output.backward()
        with torch.no_grad():
            for param in fc.parameters():
                param.add_(-0.1 * param.grad)
        session.log(loss=loss)
        if loss < 1e-3 or batch_idx >= 3000:
            break
    return finish(session)


# --------------------------------------------------------------------------------------
# pytorch/examples super_resolution/{main,model}.py
# --------------------------------------------------------------------------------------


class _SubPixelNet(nn.Module):
    """pytorch/examples' super-resolution ``Net``: conv 5x5 (64), 3x3 (64), 3x3 (32),
    3x3 (upscale**2), ``PixelShuffle``; orthogonal init with the ReLU gain."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 64, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(64, 64, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(64, 32, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(32, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
        gain = nn.init.calculate_gain("relu")
        for conv in (self.conv1, self.conv2, self.conv3):
            nn.init.orthogonal_(conv.weight, gain)
        nn.init.orthogonal_(self.conv4.weight)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        return self.pixel_shuffle(self.conv4(x))


def examples_super_resolution() -> vd.Findings:
    """pytorch/examples ``super_resolution/main.py`` (271ae40d) + ``model.py``
    (5c2b513a): (low-resolution, high-resolution) image pairs, the input the target
    downscaled by the upscale factor (2: 4x4 -> 8x8 digits in [0, 1] as its Y channel),
    ``MSELoss``, Adam lr 0.01, batch 64, ``epoch_loss += loss.item()``, test PSNR under
    ``torch.no_grad()`` without ``model.eval()`` (the net has no dropout or batch norm).
    Measured: PSNR 10.9 dB -> 15.9 dB in 10 epochs."""
    torch.manual_seed(123)
    xtr, xte, _, _ = _digits01()
    hi_tr, hi_te = torch.as_tensor(xtr), torch.as_tensor(xte)
    lo_tr = F.interpolate(hi_tr, scale_factor=0.5, mode="bicubic", align_corners=False)
    lo_te = F.interpolate(hi_te, scale_factor=0.5, mode="bicubic", align_corners=False)
    training_data_loader = DataLoader(TensorDataset(lo_tr, hi_tr), batch_size=64,
                                      shuffle=True, generator=_gen(123))
    testing_data_loader = DataLoader(TensorDataset(lo_te, hi_te), batch_size=10)
    model = _SubPixelNet(upscale_factor=2)
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    session = vd.watch(model, loader=training_data_loader)
    for _epoch in range(10):
        epoch_loss = 0.0
        for batch in training_data_loader:
            input, target = batch[0], batch[1]
            optimizer.zero_grad()
            loss = criterion(model(input), target)
            epoch_loss += loss.item()
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
        avg_psnr, avg_mse = 0.0, 0.0
        with torch.no_grad():
            for batch in testing_data_loader:
                prediction = model(batch[0])
                mse = criterion(prediction, batch[1])
                avg_psnr += 10 * math.log10(1 / mse.item())
                avg_mse += mse.item()
        n = len(testing_data_loader)
        session.log(val_loss=avg_mse / n, val_psnr=avg_psnr / n)
    return finish(session)


# --------------------------------------------------------------------------------------
# pytorch/examples gcn/main.py
# --------------------------------------------------------------------------------------


class _GraphConv(nn.Module):
    """The example's ``GraphConv``: ``kernel`` (xavier normal), ``spmm(adj, x @ kernel)``."""

    def __init__(self, input_dim: int, output_dim: int, use_bias: bool = False) -> None:
        super().__init__()
        self.kernel = nn.Parameter(torch.Tensor(input_dim, output_dim))
        nn.init.xavier_normal_(self.kernel)
        self.bias = None
        if use_bias:
            self.bias = nn.Parameter(torch.Tensor(output_dim))
            nn.init.zeros_(self.bias)

    def forward(self, input_tensor, adj_mat):
        support = torch.mm(input_tensor, self.kernel)
        output = torch.spmm(adj_mat, support)
        if self.bias is not None:
            output = output + self.bias
        return output


class _GCN(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.1):
        super().__init__()
        self.gc1 = _GraphConv(input_dim, hidden_dim, use_bias=use_bias)
        self.gc2 = _GraphConv(hidden_dim, output_dim, use_bias=use_bias)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input_tensor, adj_mat):
        x = F.relu(self.gc1(input_tensor, adj_mat))
        x = self.dropout(x)
        return F.log_softmax(self.gc2(x, adj_mat), dim=1)


def _citation_graph(n: int = 600, classes: int = 5, words: int = 300, seed: int = 0):
    """A Cora-like graph made up here: nodes of ``classes`` topics, binary bag-of-words
    features drawn from topic word distributions, citations mostly within a topic."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, size=n)
    topic_words = rng.dirichlet(np.full(words, 0.1), size=classes)
    feats = np.zeros((n, words), dtype=np.float32)
    for i in range(n):
        feats[i, rng.choice(words, size=18, p=topic_words[labels[i]])] = 1.0
    edges = []
    for i in range(n):
        same = np.flatnonzero(labels == labels[i])
        for j in rng.choice(same, size=3):
            edges.append((i, j))
        edges.append((i, int(rng.integers(0, n))))
    return feats, labels, np.array(edges, dtype=np.int64).T


def examples_gcn() -> vd.Findings:
    """pytorch/examples ``gcn/main.py`` (2e70ddad): features row-normalised by a sparse
    diagonal and passed *sparse* (``features.to_sparse()``), the adjacency with self
    loops renormalised D^-1/2 A D^-1/2 and sparse, a two-layer GCN (hidden 16, dropout
    0.5, bias), ``NLLLoss`` on ``output[idx_train]``, Adam lr 0.01 weight decay 5e-4, one
    full-graph step per epoch, then ``test()`` on the training and validation masks
    (``model.eval()`` + ``no_grad``; ``train_iter`` sets ``model.train()`` back). 200
    epochs. Measured: validation loss 1.60 -> 0.045, accuracy 0.66 -> 1.0."""
    torch.manual_seed(42)
    feats, labels_np, edges = _citation_graph()
    features = torch.as_tensor(feats)
    scale = 1 / features.sum(dim=1)
    scale[scale == float("inf")] = 0
    features = torch.diag(scale).to_sparse() @ features
    labels = torch.as_tensor(labels_np)
    v = len(labels)
    adj = torch.sparse_coo_tensor(torch.as_tensor(edges), torch.ones(edges.shape[1]), (v, v))
    adj = torch.eye(v) + adj
    degree = torch.sqrt(1 / torch.sum(adj, dim=1))
    degree[degree == float("inf")] = 0
    degree = torch.diag(degree).to_sparse()
    adj = (degree @ adj @ degree).to_sparse()
    features = features.to_sparse()
    idx = torch.randperm(v)
    idx_val, idx_train = idx[150:250], idx[250:]

    gcn = _GCN(features.shape[1], 16, int(labels.max()) + 1, True, 0.5)
    optimizer = torch.optim.Adam(gcn.parameters(), lr=0.01, weight_decay=5e-4)
    criterion = nn.NLLLoss()
    session = vd.watch(gcn)

    def test(mask):
        gcn.eval()
        with torch.no_grad():
            output = gcn(features, adj)
            output, target = output[mask], labels[mask]
            loss = criterion(output, target)
            acc = (output.argmax(dim=1) == target).float().sum() / len(target)
        return loss.item(), acc.item()

    for _epoch in range(200):
        gcn.train()
        optimizer.zero_grad()
        output = gcn(features, adj)
        loss = criterion(output[idx_train], labels[idx_train])
        loss.backward()
        optimizer.step()
        session.log(loss=loss)
        test(idx_train)
        loss_val, acc_val = test(idx_val)
        session.log(val_loss=loss_val, val_acc=acc_val)
    return finish(session)


# --------------------------------------------------------------------------------------
# pytorch/examples imagenet/main.py
# --------------------------------------------------------------------------------------


class _BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + identity)


class _TinyResNet(nn.Module):
    """A resnet18-shaped net for 8x8 inputs: stem, two stages of basic blocks, pool, fc."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.layer1 = nn.Sequential(_BasicBlock(16, 16), _BasicBlock(16, 16))
        self.layer2 = nn.Sequential(_BasicBlock(16, 32, 2), _BasicBlock(32, 32))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class _AverageMeter:
    def __init__(self) -> None:
        self.sum, self.count, self.avg = 0.0, 0, 0.0

    def update(self, val: float, n: int = 1) -> None:
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def _accuracy(output, target, topk=(1,)):
    """The examples' ``accuracy``: precision@k in percent for each k."""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        return [correct[:k].reshape(-1).float().sum(0, keepdim=True).mul_(100.0 / batch_size)
                for k in topk]


def examples_imagenet_loop() -> vd.Findings:
    """pytorch/examples ``imagenet/main.py`` (493da930): ``train()`` with
    ``model.train()``, ``AverageMeter``s of ``loss.item()`` and top-1/top-5 precision
    (``accuracy(output, target, topk=(1, 5))``), zero_grad/backward/step after the
    meters; ``validate()`` with ``model.eval()`` + ``no_grad``; ``best_acc1`` kept; SGD
    lr 0.1 momentum 0.9 weight decay 1e-4, StepLR(step_size=30, gamma=0.1) after each
    epoch (here 3 of 9 epochs); CrossEntropyLoss; a resnet-shaped net sized for 8x8
    digits, batch 32. Measured: top-1 0.53 -> 0.99."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits_std()
    train_loader = DataLoader(TensorDataset(torch.as_tensor(xtr), torch.as_tensor(ytr)),
                              batch_size=32, shuffle=True, generator=_gen(0))
    val_loader = DataLoader(TensorDataset(torch.as_tensor(xte), torch.as_tensor(yte)),
                            batch_size=100)
    model = _TinyResNet()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.1)
    session = vd.watch(model, loader=train_loader)

    def train() -> None:
        losses, top1, top5 = _AverageMeter(), _AverageMeter(), _AverageMeter()
        model.train()
        for images, target in train_loader:
            output = model(images)
            loss = criterion(output, target)
            acc1, acc5 = _accuracy(output, target, topk=(1, 5))
            losses.update(loss.item(), images.size(0))
            top1.update(acc1[0].item(), images.size(0))
            top5.update(acc5[0].item(), images.size(0))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            session.log(loss=loss)

    def validate() -> float:
        losses, top1 = _AverageMeter(), _AverageMeter()
        model.eval()
        with torch.no_grad():
            for images, target in val_loader:
                output = model(images)
                loss = criterion(output, target)
                acc1, _acc5 = _accuracy(output, target, topk=(1, 5))
                losses.update(loss.item(), images.size(0))
                top1.update(acc1[0].item(), images.size(0))
        session.log(val_loss=losses.avg, val_acc=top1.avg / 100)
        return top1.avg

    best_acc1 = 0.0
    for _epoch in range(9):
        train()
        acc1 = validate()
        scheduler.step()
        best_acc1 = max(acc1, best_acc1)
    return finish(session)


# --------------------------------------------------------------------------------------
# pytorch/tutorials beginner_source/nn_tutorial.py
# --------------------------------------------------------------------------------------


class _MnistLogistic(nn.Module):
    """The tutorial's ``Mnist_Logistic``: one ``nn.Linear`` over the flat image."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(64, 10)

    def forward(self, xb):
        return self.lin(xb)


class _WrappedDataLoader:
    """The tutorial's ``WrappedDataLoader``: a DataLoader whose batches go through
    ``func``."""

    def __init__(self, dl, func) -> None:
        self.dl, self.func = dl, func

    def __len__(self) -> int:
        return len(self.dl)

    def __iter__(self):
        for b in self.dl:
            yield self.func(*b)


def tutorials_nn_tutorial_fit() -> vd.Findings:
    """PyTorch's "What is torch.nn really?" (pytorch/tutorials
    ``beginner_source/nn_tutorial.py`` @764a8d6a): flat image rows (its MNIST is stored
    as 784-long rows), ``get_data`` (valid batch twice the train batch), a
    ``WrappedDataLoader(dl, preprocess)``, ``Mnist_Logistic`` (one ``nn.Linear``),
    ``F.cross_entropy``, SGD lr 0.5, ``loss_batch`` (backward, step, then zero_grad) and
    ``fit`` (``model.train()``; ``model.eval()`` and the validation loss as the
    size-weighted mean of ``zip(*[loss_batch(...)])`` under ``no_grad``). Measured:
    validation loss 1.33 -> 0.30 in 10 epochs.

    (The tutorial's last model, three conv+ReLU layers then ``AdaptiveAvgPool2d``, feeds
    ReLU-clipped scores to the loss: vizdebug warns ``loss-output-mismatch`` there, and
    rightly: on these digits the same loop reaches a validation loss of 0.93 with that
    ReLU and 0.07 without it, measured. It is not a control.)"""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = _digits01()
    x_train, x_valid = (torch.as_tensor(a.reshape(len(a), -1)) for a in (xtr, xte))
    y_train, y_valid = torch.as_tensor(ytr), torch.as_tensor(yte)
    bs = 64

    def get_data(train_ds, valid_ds, bs):
        return (DataLoader(train_ds, batch_size=bs, shuffle=True, generator=_gen(0)),
                DataLoader(valid_ds, batch_size=bs * 2))

    def preprocess(x, y):
        return x.view(-1, 64), y

    train_dl, valid_dl = get_data(TensorDataset(x_train, y_train),
                                  TensorDataset(x_valid, y_valid), bs)
    train_dl, valid_dl = _WrappedDataLoader(train_dl, preprocess), _WrappedDataLoader(
        valid_dl, preprocess)
    model = _MnistLogistic()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    loss_func = F.cross_entropy
    session = vd.watch(model, loader=train_dl)

    def loss_batch(model, loss_func, xb, yb, opt=None):
        loss = loss_func(model(xb), yb)
        if opt is not None:
            loss.backward()
            opt.step()
            opt.zero_grad()
            session.log(loss=loss)
        return loss.item(), len(xb)

    def fit(epochs, model, loss_func, opt, train_dl, valid_dl):
        for _epoch in range(epochs):
            model.train()
            for xb, yb in train_dl:
                loss_batch(model, loss_func, xb, yb, opt)
            model.eval()
            with torch.no_grad():
                losses, nums = zip(*[loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl])
            val_loss = np.sum(np.multiply(losses, nums)) / np.sum(nums)
            session.log(val_loss=float(val_loss))

    fit(10, model, loss_func, opt, train_dl, valid_dl)
    return finish(session)


# --------------------------------------------------------------------------------------
# pytorch/tutorials beginner_source/nlp/deep_learning_tutorial.py
# --------------------------------------------------------------------------------------


def _two_language_sentences(n: int = 60, seed: int = 0):
    """Sentences of two made-up languages (disjoint vocabularies sharing a few words)."""
    rng = random.Random(seed)
    lang = {"A": [f"a{i}" for i in range(12)] + ["x", "y"],
            "B": [f"b{i}" for i in range(12)] + ["x", "y"]}
    out = []
    for i in range(n):
        label = "A" if i % 2 == 0 else "B"
        out.append(([rng.choice(lang[label]) for _ in range(rng.randint(3, 7))], label))
    return out


class _BoWClassifier(nn.Module):
    def __init__(self, num_labels: int, vocab_size: int) -> None:
        super().__init__()
        self.linear = nn.Linear(vocab_size, num_labels)

    def forward(self, bow_vec):
        return F.log_softmax(self.linear(bow_vec), dim=1)


def tutorials_bow_classifier() -> vd.Findings:
    """PyTorch's "Deep Learning with PyTorch" NLP tutorial (pytorch/tutorials
    ``beginner_source/nlp/deep_learning_tutorial.py`` @016d0cc0): a bag-of-words vector
    per sentence (``make_bow_vector``, shape (1, vocab)), ``BoWClassifier`` (Linear +
    ``log_softmax``), one sentence per step, ``model.zero_grad()``, ``NLLLoss`` on
    ``make_target``, SGD lr 0.1, 100 epochs over the data (60 made-up sentences of two
    languages in place of its Spanish/English pairs), test log-probs under ``no_grad``.
    Measured: test NLL 0.025 after 10 epochs -> 0.005, training loss 0.82 -> 8e-5."""
    torch.manual_seed(1)
    data = _two_language_sentences(60, seed=0)
    test_data = _two_language_sentences(20, seed=1)
    word_to_ix: dict[str, int] = {}
    for sent, _ in data + test_data:
        for word in sent:
            word_to_ix.setdefault(word, len(word_to_ix))
    label_to_ix = {"A": 0, "B": 1}

    def make_bow_vector(sentence):
        vec = torch.zeros(len(word_to_ix))
        for word in sentence:
            vec[word_to_ix[word]] += 1
        return vec.view(1, -1)

    def make_target(label):
        return torch.LongTensor([label_to_ix[label]])

    model = _BoWClassifier(2, len(word_to_ix))
    loss_function = nn.NLLLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    session = vd.watch(model)
    for _epoch in range(100):
        for instance, label in data:
            model.zero_grad()
            log_probs = model(make_bow_vector(instance))
            loss = loss_function(log_probs, make_target(label))
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
        if _epoch % 10 == 9:
            with torch.no_grad():
                nll = [float(loss_function(model(make_bow_vector(s)), make_target(lab)))
                       for s, lab in test_data]
            session.log(val_loss=float(np.mean(nll)))
    return finish(session)


# --------------------------------------------------------------------------------------
# pytorch/tutorials beginner_source/nlp/advanced_tutorial.py (BiLSTM-CRF)
# --------------------------------------------------------------------------------------


def _argmax(vec):
    _, idx = torch.max(vec, 1)
    return idx.item()


def _log_sum_exp(vec):
    max_score = vec[0, _argmax(vec)]
    max_score_broadcast = max_score.view(1, -1).expand(1, vec.size()[1])
    return max_score + torch.log(torch.sum(torch.exp(vec - max_score_broadcast)))


_START_TAG, _STOP_TAG = "<START>", "<STOP>"


class _BiLSTMCRF(nn.Module):
    """The tutorial's ``BiLSTM_CRF``: embeddings, a bidirectional LSTM whose features a
    linear layer maps to tag space, a transition matrix; ``neg_log_likelihood`` is the
    forward algorithm's score minus the gold path's, ``forward`` the Viterbi decode."""

    def __init__(self, vocab_size, tag_to_ix, embedding_dim, hidden_dim) -> None:
        super().__init__()
        self.hidden_dim = hidden_dim
        self.tag_to_ix = tag_to_ix
        self.tagset_size = len(tag_to_ix)
        self.word_embeds = nn.Embedding(vocab_size, embedding_dim)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim // 2, num_layers=1, bidirectional=True)
        self.hidden2tag = nn.Linear(hidden_dim, self.tagset_size)
        self.transitions = nn.Parameter(torch.randn(self.tagset_size, self.tagset_size))
        self.transitions.data[tag_to_ix[_START_TAG], :] = -10000
        self.transitions.data[:, tag_to_ix[_STOP_TAG]] = -10000
        self.hidden = self.init_hidden()

    def init_hidden(self):
        return (torch.randn(2, 1, self.hidden_dim // 2), torch.randn(2, 1, self.hidden_dim // 2))

    def _forward_alg(self, feats):
        init_alphas = torch.full((1, self.tagset_size), -10000.0)
        init_alphas[0][self.tag_to_ix[_START_TAG]] = 0.0
        forward_var = init_alphas
        for feat in feats:
            alphas_t = []
            for next_tag in range(self.tagset_size):
                emit_score = feat[next_tag].view(1, -1).expand(1, self.tagset_size)
                trans_score = self.transitions[next_tag].view(1, -1)
                alphas_t.append(_log_sum_exp(forward_var + trans_score + emit_score).view(1))
            forward_var = torch.cat(alphas_t).view(1, -1)
        terminal_var = forward_var + self.transitions[self.tag_to_ix[_STOP_TAG]]
        return _log_sum_exp(terminal_var)

    def _get_lstm_features(self, sentence):
        self.hidden = self.init_hidden()
        embeds = self.word_embeds(sentence).view(len(sentence), 1, -1)
        lstm_out, self.hidden = self.lstm(embeds, self.hidden)
        return self.hidden2tag(lstm_out.view(len(sentence), self.hidden_dim))

    def _score_sentence(self, feats, tags):
        score = torch.zeros(1)
        tags = torch.cat([torch.tensor([self.tag_to_ix[_START_TAG]], dtype=torch.long), tags])
        for i, feat in enumerate(feats):
            score = score + self.transitions[tags[i + 1], tags[i]] + feat[tags[i + 1]]
        return score + self.transitions[self.tag_to_ix[_STOP_TAG], tags[-1]]

    def _viterbi_decode(self, feats):
        backpointers = []
        init_vvars = torch.full((1, self.tagset_size), -10000.0)
        init_vvars[0][self.tag_to_ix[_START_TAG]] = 0
        forward_var = init_vvars
        for feat in feats:
            bptrs_t, viterbivars_t = [], []
            for next_tag in range(self.tagset_size):
                next_tag_var = forward_var + self.transitions[next_tag]
                best_tag_id = _argmax(next_tag_var)
                bptrs_t.append(best_tag_id)
                viterbivars_t.append(next_tag_var[0][best_tag_id].view(1))
            forward_var = (torch.cat(viterbivars_t) + feat).view(1, -1)
            backpointers.append(bptrs_t)
        terminal_var = forward_var + self.transitions[self.tag_to_ix[_STOP_TAG]]
        best_tag_id = _argmax(terminal_var)
        path_score = terminal_var[0][best_tag_id]
        best_path = [best_tag_id]
        for bptrs_t in reversed(backpointers):
            best_tag_id = bptrs_t[best_tag_id]
            best_path.append(best_tag_id)
        best_path.pop()
        best_path.reverse()
        return path_score, best_path

    def neg_log_likelihood(self, sentence, tags):
        feats = self._get_lstm_features(sentence)
        return self._forward_alg(feats) - self._score_sentence(feats, tags)

    def forward(self, sentence):
        return self._viterbi_decode(self._get_lstm_features(sentence))


def _tagged_sentences(n: int, seed: int):
    """Made-up sentences: filler words tagged O, two-word names (B I) from a name list."""
    rng = random.Random(seed)
    fillers = [f"w{i}" for i in range(15)]
    firsts, lasts = [f"f{i}" for i in range(5)], [f"l{i}" for i in range(5)]
    out = []
    for _ in range(n):
        words, tags = [], []
        for _ in range(rng.randint(2, 5)):
            if rng.random() < 0.3:
                words += [rng.choice(firsts), rng.choice(lasts)]
                tags += ["B", "I"]
            else:
                words.append(rng.choice(fillers))
                tags.append("O")
        out.append((words, tags))
    return out


def tutorials_bilstm_crf() -> vd.Findings:
    """PyTorch's "Advanced: Making Dynamic Decisions and the Bi-LSTM CRF" (pytorch/tutorials
    ``beginner_source/nlp/advanced_tutorial.py`` @546ebc60): the model above, embedding 5,
    hidden 4, trained through ``model.neg_log_likelihood(sentence_in, targets)`` (the
    module's ``forward`` is only the decoder, called under ``no_grad`` to check), one
    sentence per step, ``model.zero_grad()``, SGD lr 0.01 weight decay 1e-4. 40 made-up
    sentences (its two sentences, many more) for 20 epochs. Measured: NLL per
    sentence 5.8 -> 0.45, tag accuracy of the decoder 0.47 -> 0.89."""
    torch.manual_seed(1)
    training_data = _tagged_sentences(40, seed=0)
    word_to_ix: dict[str, int] = {}
    for sentence, _tags in training_data:
        for word in sentence:
            word_to_ix.setdefault(word, len(word_to_ix))
    tag_to_ix = {"B": 0, "I": 1, "O": 2, _START_TAG: 3, _STOP_TAG: 4}

    def prepare_sequence(seq, to_ix):
        return torch.tensor([to_ix[w] for w in seq], dtype=torch.long)

    model = _BiLSTMCRF(len(word_to_ix), tag_to_ix, 5, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, weight_decay=1e-4)
    session = vd.watch(model)
    for _epoch in range(20):
        for sentence, tags in training_data:
            model.zero_grad()
            sentence_in = prepare_sequence(sentence, word_to_ix)
            targets = torch.tensor([tag_to_ix[t] for t in tags], dtype=torch.long)
            loss = model.neg_log_likelihood(sentence_in, targets)
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
        with torch.no_grad():
            right = total = 0
            for sentence, tags in training_data[:10]:
                _, path = model(prepare_sequence(sentence, word_to_ix))
                right += sum(int(p == tag_to_ix[t]) for p, t in zip(path, tags))
                total += len(tags)
        session.log(val_acc=right / total)
    return finish(session)


# --------------------------------------------------------------------------------------
# pytorch/tutorials beginner_source/text_sentiment_ngrams_tutorial.py
# --------------------------------------------------------------------------------------


class _TopicTexts(Dataset):
    """(label, token ids) items of four made-up news topics, of varying length."""

    def __init__(self, n: int = 1200, vocab: int = 400, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        topic_words = rng.dirichlet(np.full(vocab, 0.05), size=4)
        self.items = []
        for _ in range(n):
            label = int(rng.integers(0, 4))
            length = int(rng.integers(8, 40))
            mix = 0.6 * topic_words[label] + 0.4 / vocab
            self.items.append((label, rng.choice(vocab, size=length, p=mix / mix.sum())))

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


class _TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class) -> None:
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        return self.fc(self.embedding(text, offsets))


def tutorials_text_sentiment_embeddingbag() -> vd.Findings:
    """PyTorch's "Text classification with the torchtext library" (pytorch/tutorials
    ``beginner_source/text_sentiment_ngrams_tutorial.py`` @51309670): ``collate_batch``
    returning ``(label, text, offsets)`` (labels first, the texts concatenated into one
    1-d tensor with offsets), ``EmbeddingBag`` + Linear with uniform(-0.5, 0.5) init,
    ``CrossEntropyLoss``, SGD lr 5, ``clip_grad_norm_(..., 0.1)``, StepLR(1, gamma=0.1)
    stepped only when the validation accuracy stops rising, ``random_split`` 95/5 of the
    training set, batch 64, 10 epochs. Measured: validation loss 0.44 -> 0.010 (accuracy 1.0 from the first epoch)."""
    torch.manual_seed(0)
    dataset = _TopicTexts()
    train_set, test_set = dataset.items[:1000], dataset.items[1000:]

    def collate_batch(batch):
        label_list, text_list, offsets = [], [], [0]
        for _label, _text in batch:
            label_list.append(_label)
            processed_text = torch.tensor(_text, dtype=torch.int64)
            text_list.append(processed_text)
            offsets.append(processed_text.size(0))
        label_list = torch.tensor(label_list, dtype=torch.int64)
        offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
        return label_list, torch.cat(text_list), offsets

    num_train = int(len(train_set) * 0.95)
    split_train_, split_valid_ = random_split(train_set, [num_train, len(train_set) - num_train],
                                              generator=_gen(0))
    train_dataloader = DataLoader(split_train_, batch_size=64, shuffle=True,
                                  collate_fn=collate_batch, generator=_gen(1))
    valid_dataloader = DataLoader(split_valid_, batch_size=64, collate_fn=collate_batch)
    test_dataloader = DataLoader(test_set, batch_size=64, collate_fn=collate_batch)
    model = _TextClassificationModel(400, 64, 4)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=5)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
    session = vd.watch(model, loader=train_dataloader)

    def train() -> None:
        model.train()
        for label, text, offsets in train_dataloader:
            optimizer.zero_grad()
            predicted_label = model(text, offsets)
            loss = criterion(predicted_label, label)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
            session.log(loss=loss)

    def evaluate(dataloader) -> tuple[float, float]:
        model.eval()
        total_acc, total_count, total_loss = 0, 0, 0.0
        with torch.no_grad():
            for label, text, offsets in dataloader:
                predicted_label = model(text, offsets)
                total_loss += criterion(predicted_label, label).item() * label.size(0)
                total_acc += (predicted_label.argmax(1) == label).sum().item()
                total_count += label.size(0)
        return total_acc / total_count, total_loss / total_count

    total_accu = None
    for _epoch in range(10):
        train()
        accu_val, loss_val = evaluate(valid_dataloader)
        if total_accu is not None and total_accu > accu_val:
            scheduler.step()
        else:
            total_accu = accu_val
        session.log(val_loss=loss_val, val_acc=accu_val)
    evaluate(test_dataloader)
    return finish(session)


# --------------------------------------------------------------------------------------
# pytorch/tutorials beginner_source/examples_nn/dynamic_net.py
# --------------------------------------------------------------------------------------


class _DynamicNet(nn.Module):
    """The tutorial's ``DynamicNet``: five scalar parameters; each forward adds the
    x**4 (and at random x**5) terms with the same ``e``."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Parameter(torch.randn(()))
        self.b = nn.Parameter(torch.randn(()))
        self.c = nn.Parameter(torch.randn(()))
        self.d = nn.Parameter(torch.randn(()))
        self.e = nn.Parameter(torch.randn(()))

    def forward(self, x):
        y = self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3
        for exp in range(4, random.randint(4, 6)):
            y = y + self.e * x ** exp
        return y


def tutorials_dynamic_net() -> vd.Findings:
    """PyTorch's "Control Flow + Weight Sharing" example (pytorch/tutorials
    ``beginner_source/examples_nn/dynamic_net.py`` @1d189709): ``sin`` on 2000 points of
    [-pi, pi] fitted by the model above in one full batch per step (no loader),
    ``MSELoss(reduction='sum')``, SGD lr 1e-8 momentum 0.9, zero_grad/backward/step.
    4000 of its 30000 iterations. Measured: summed squared error 3.9e6 -> 1.1e3."""
    torch.manual_seed(0)
    random.seed(0)
    x = torch.linspace(-math.pi, math.pi, 2000)
    y = torch.sin(x)
    model = _DynamicNet()
    criterion = nn.MSELoss(reduction="sum")
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-8, momentum=0.9)
    session = vd.watch(model)
    for _t in range(4000):
        y_pred = model(x)
        loss = criterion(y_pred, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        session.log(loss=loss)
    return finish(session)


# --------------------------------------------------------------------------------------
# pytorch/tutorials beginner_source/examples_nn/polynomial_optim.py
# --------------------------------------------------------------------------------------


def tutorials_polynomial_optim() -> vd.Findings:
    """PyTorch's "nn + optim" example (pytorch/tutorials
    ``beginner_source/examples_nn/polynomial_optim.py`` @96efa19f): the features x, x**2,
    x**3 of 2000 points (``x.unsqueeze(-1).pow(p)``), ``nn.Sequential(nn.Linear(3, 1),
    nn.Flatten(0, 1))``, ``MSELoss(reduction='sum')`` against ``sin(x)``, RMSprop lr
    1e-3, 2000 full-batch steps (zero_grad, backward, step). Measured: summed squared
    error 7.3e4 -> 8.9."""
    torch.manual_seed(0)
    x = torch.linspace(-math.pi, math.pi, 2000)
    y = torch.sin(x)
    p = torch.tensor([1, 2, 3])
    xx = x.unsqueeze(-1).pow(p)
    model = nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1))
    loss_fn = nn.MSELoss(reduction="sum")
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    session = vd.watch(model)
    for _t in range(2000):
        y_pred = model(xx)
        loss = loss_fn(y_pred, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        session.log(loss=loss)
    return finish(session)


# --------------------------------------------------------------------------------------
# d2l-ai/d2l-en chapter_linear-networks/linear-regression-concise.md
# --------------------------------------------------------------------------------------


def d2l_linear_regression_concise() -> vd.Findings:
    """d2l.ai "Concise Implementation of Linear Regression" (d2l-ai/d2l-en
    ``chapter_linear-networks/linear-regression-concise.md`` @95eec3f6, the PyTorch
    tab): ``synthetic_data(w=[2, -3.4], b=4.2, 1000)`` with noise 0.01, ``load_array``
    batches of 10, ``nn.Sequential(nn.Linear(2, 1))`` with ``weight.data.normal_(0,
    0.01)`` and ``bias.data.fill_(0)``, ``MSELoss``, SGD lr 0.03, ``l = loss(net(X), y);
    trainer.zero_grad(); l.backward(); trainer.step()``, the loss on all features printed
    after each of 3 epochs. Measured: epoch loss 2.5e-4, 9.3e-5, 9.3e-5 (the noise
    floor)."""
    torch.manual_seed(0)
    true_w, true_b = torch.tensor([2, -3.4]), 4.2
    features = torch.normal(0, 1, (1000, len(true_w)))
    labels = (torch.matmul(features, true_w) + true_b).reshape((-1, 1))
    labels += torch.normal(0, 0.01, labels.shape)
    data_iter = DataLoader(TensorDataset(features, labels), batch_size=10, shuffle=True,
                           generator=_gen(0))
    net = nn.Sequential(nn.Linear(2, 1))
    net[0].weight.data.normal_(0, 0.01)
    net[0].bias.data.fill_(0)
    loss = nn.MSELoss()
    trainer = torch.optim.SGD(net.parameters(), lr=0.03)
    session = vd.watch(net, loader=data_iter)
    for _epoch in range(3):
        for X, y in data_iter:
            l = loss(net(X), y)  # noqa: E741 - d2l's name
            trainer.zero_grad()
            l.backward()
            trainer.step()
            session.log(loss=l)
        with torch.no_grad():
            session.log(epoch_loss=float(loss(net(features), labels)))
    return finish(session)


# --------------------------------------------------------------------------------------
# d2l-ai/d2l-en chapter_convolutional-modern/densenet.md (+ d2l.Trainer)
# --------------------------------------------------------------------------------------


def _conv_block(num_channels):
    return nn.Sequential(nn.LazyBatchNorm2d(), nn.ReLU(),
                         nn.LazyConv2d(num_channels, kernel_size=3, padding=1))


class _DenseBlock(nn.Module):
    def __init__(self, num_convs, num_channels) -> None:
        super().__init__()
        self.net = nn.Sequential(*[_conv_block(num_channels) for _ in range(num_convs)])

    def forward(self, X):
        for blk in self.net:
            Y = blk(X)
            X = torch.cat((X, Y), dim=1)
        return X


def _transition_block(num_channels):
    return nn.Sequential(nn.LazyBatchNorm2d(), nn.ReLU(), nn.LazyConv2d(num_channels, kernel_size=1),
                         nn.AvgPool2d(kernel_size=2, stride=2))


class _DenseNet(nn.Module):
    """d2l's ``DenseNet`` (b1 stem, dense blocks with transitions, BN-ReLU-pool-flatten-
    LazyLinear head), with its ``d2l.Classifier`` steps."""

    def __init__(self, num_channels=32, growth_rate=16, arch=(2, 2, 2), lr=0.1,
                 num_classes=10) -> None:
        super().__init__()
        self.lr = lr
        self.net = nn.Sequential(nn.Sequential(
            nn.LazyConv2d(num_channels, kernel_size=7, stride=2, padding=3),
            nn.LazyBatchNorm2d(), nn.ReLU(), nn.MaxPool2d(kernel_size=3, stride=2, padding=1)))
        for i, num_convs in enumerate(arch):
            self.net.add_module(f"dense_blk{i + 1}", _DenseBlock(num_convs, growth_rate))
            num_channels += num_convs * growth_rate
            if i != len(arch) - 1:
                num_channels //= 2
                self.net.add_module(f"tran_blk{i + 1}", _transition_block(num_channels))
        self.net.add_module("last", nn.Sequential(
            nn.LazyBatchNorm2d(), nn.ReLU(), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(),
            nn.LazyLinear(num_classes)))

    def forward(self, X):
        return self.net(X)

    def loss(self, Y_hat, Y):
        return F.cross_entropy(Y_hat.reshape((-1, Y_hat.shape[-1])), Y.reshape((-1,)))

    def accuracy(self, Y_hat, Y):
        preds = Y_hat.reshape((-1, Y_hat.shape[-1])).argmax(axis=1).type(Y.dtype)
        return (preds == Y.reshape(-1)).type(torch.float32).mean()

    def training_step(self, batch):
        return self.loss(self(*batch[:-1]), batch[-1])

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), self.lr)


def d2l_densenet_trainer() -> vd.Findings:
    """d2l.ai "Densely Connected Networks" (d2l-ai/d2l-en
    ``chapter_convolutional-modern/densenet.md`` @03b29ddd) trained by ``d2l.Trainer``'s
    ``fit_epoch``: ``model.train()``, ``training_step``, ``zero_grad``, backward and step
    inside ``torch.no_grad()``, then ``model.eval()`` and ``validation_step`` under
    ``no_grad``. Lazy layers initialised by a first batch (``apply_init``, xavier on
    the conv and linear weights as ``d2l.init_cnn``). Smaller than the chapter (32
    channels, growth 16, arch (2, 2, 2)), digits resized to 32x32 as it resizes
    Fashion-MNIST to 96, batch 32, the class's default lr 0.1, 8 epochs. Measured:
    validation accuracy 0.24 -> 0.98 (0.39 at epoch 4: the running statistics lag)."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = _digits01()
    up_tr = F.interpolate(torch.as_tensor(xtr), size=(32, 32), mode="bilinear")
    up_te = F.interpolate(torch.as_tensor(xte), size=(32, 32), mode="bilinear")
    train_dataloader = DataLoader(TensorDataset(up_tr, torch.as_tensor(ytr)), batch_size=32,
                                  shuffle=True, generator=_gen(0))
    val_dataloader = DataLoader(TensorDataset(up_te, torch.as_tensor(yte)), batch_size=32)
    model = _DenseNet(lr=0.1)
    session = vd.watch(model, loader=train_dataloader)
    model(next(iter(train_dataloader))[0])  # apply_init: materialise the lazy layers

    def init_cnn(module):
        if type(module) in (nn.Linear, nn.Conv2d):
            nn.init.xavier_uniform_(module.weight)

    model.apply(init_cnn)
    optim = model.configure_optimizers()
    for _epoch in range(8):
        model.train()
        for batch in train_dataloader:
            loss = model.training_step(batch)
            optim.zero_grad()
            with torch.no_grad():
                loss.backward()
                optim.step()
            session.log(loss=loss)
        model.eval()
        losses, accs = [], []
        for batch in val_dataloader:
            with torch.no_grad():
                y_hat = model(*batch[:-1])
                losses.append(float(model.loss(y_hat, batch[-1])))
                accs.append(float(model.accuracy(y_hat, batch[-1])))
        session.log(val_loss=float(np.mean(losses)), val_acc=float(np.mean(accs)))
    return finish(session)


# --------------------------------------------------------------------------------------
# d2l-ai/d2l-en chapter_multilayer-perceptrons/kaggle-house-price.md
# --------------------------------------------------------------------------------------


def _houses(n: int = 900, seed: int = 0):
    """A made-up house-price table of the Kaggle set's kind: numeric columns with
    missing values, 40 categorical columns (most unrelated to the price), a SalePrice in
    dollars (log-normal)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    hood = rng.integers(0, 25, n)
    quality = rng.integers(1, 11, n)
    area = rng.lognormal(7.3, 0.35, n)
    year = rng.integers(1900, 2010, n)
    lot = rng.lognormal(9.1, 0.5, n)
    style = rng.choice(["1Story", "2Story", "1.5Fin", "SLvl", "Split"], n)
    hood_effect = rng.normal(0, 0.15, 25)
    log_price = (11.0 + 0.09 * quality + 0.5 * (np.log(area) - 7.3) + 0.003 * (year - 1970)
                 + 0.1 * (np.log(lot) - 9.1) + hood_effect[hood] + rng.normal(0, 0.08, n))
    frame = pd.DataFrame({
        "Id": np.arange(n), "MSZoning": rng.choice(["RL", "RM", "FV", "RH"], n),
        "LotArea": lot.round(), "Neighborhood": [f"N{h}" for h in hood],
        "OverallQual": quality, "YearBuilt": year, "GrLivArea": area.round(),
        "HouseStyle": style, "GarageArea": np.where(rng.random(n) < 0.05, np.nan,
                                                    rng.normal(470, 200, n).clip(0)),
        "SalePrice": np.exp(log_price).round()})
    for k in range(36):  # the Kaggle file's other categorical columns (43 in all)
        levels = [f"c{k}_{v}" for v in range(int(rng.integers(2, 7)))]
        frame.insert(frame.shape[1] - 1, f"Cat{k}", rng.choice(levels, n))
    return frame


def d2l_kaggle_house_price() -> vd.Findings:
    """d2l.ai "Predicting House Prices on Kaggle" (d2l-ai/d2l-en
    ``chapter_multilayer-perceptrons/kaggle-house-price.md`` @71000266, the PyTorch
    tab of the 0.17 text): numeric columns standardised then ``fillna(0)``,
    ``pd.get_dummies(..., dummy_na=True)``, a linear net ``nn.Sequential(nn.Linear(in,
    1))`` trained with ``MSELoss`` on the raw prices in dollars, Adam lr 5 weight decay
    0, batch 64, 100 epochs, ``log_rmse`` (predictions clamped to >= 1, RMSE of the
    logs) on the training and the held-out fold after each epoch. One fold of its k-fold
    loop watched. Made-up houses in place of the Kaggle file. Measured: held-out log RMSE
    3.66 -> 0.29."""
    import pandas as pd

    torch.manual_seed(0)
    data = _houses()
    all_features = data.iloc[:, 1:-1].copy()
    numeric_features = all_features.select_dtypes(include="number").columns  # its dtypes
    # != 'object' test, which pandas' newer string dtype no longer passes
    all_features[numeric_features] = all_features[numeric_features].apply(
        lambda x: (x - x.mean()) / (x.std()))
    all_features[numeric_features] = all_features[numeric_features].fillna(0)
    all_features = pd.get_dummies(all_features, dummy_na=True)
    features = torch.tensor(all_features.values.astype(np.float32))
    labels = torch.tensor(data.SalePrice.values.reshape(-1, 1), dtype=torch.float32)
    fold = len(features) // 5
    x_valid, y_valid = features[:fold], labels[:fold]
    x_train, y_train = features[fold:], labels[fold:]
    loss = nn.MSELoss()
    net = nn.Sequential(nn.Linear(features.shape[1], 1))

    def log_rmse(features, labels):
        with torch.no_grad():
            clipped_preds = torch.clamp(net(features), 1, float("inf"))
            return torch.sqrt(loss(torch.log(clipped_preds), torch.log(labels))).item()

    train_iter = DataLoader(TensorDataset(x_train, y_train), batch_size=64, shuffle=True,
                            generator=_gen(0))
    optimizer = torch.optim.Adam(net.parameters(), lr=5, weight_decay=0)
    session = vd.watch(net, loader=train_iter)
    for _epoch in range(100):
        for X, y in train_iter:
            optimizer.zero_grad()
            l = loss(net(X), y)  # noqa: E741 - d2l's name
            l.backward()
            optimizer.step()
            session.log(loss=l)
        session.log(train_log_rmse=log_rmse(x_train, y_train),
                    val_log_rmse=log_rmse(x_valid, y_valid))
    return finish(session)


# --------------------------------------------------------------------------------------
# huggingface/course chapters/en/chapter3/4.mdx ("A full training")
# --------------------------------------------------------------------------------------


def _sentence_pairs(n: int, seed: int, vocab: int = 60, length: int = 8):
    """MRPC-like pairs made up here: label 1 when the second sentence is the first with
    two tokens changed and shuffled, 0 when it is another sentence."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        a = rng.integers(5, vocab, size=int(rng.integers(length - 3, length + 1)))
        if rng.random() < 0.5:
            b = a.copy()
            b[rng.integers(0, len(b), size=2)] = rng.integers(5, vocab, size=2)
            b, label = rng.permutation(b), 1
        else:
            b, label = rng.integers(5, vocab, size=int(rng.integers(length - 3, length + 1))), 0
        out.append((a, b, label))
    return out


def _pair_collate(batch):
    """What ``DataCollatorWithPadding`` hands the loop: [CLS] a [SEP] b [SEP] padded to
    the batch's longest, with token types, attention mask and labels, as a dict."""
    cls, sep, pad = 1, 2, 0
    seqs = [[cls, *a.tolist(), sep, *b.tolist(), sep] for a, b, _ in batch]
    types = [[0] * (len(a) + 2) + [1] * (len(b) + 1) for a, b, _ in batch]
    width = max(map(len, seqs))
    input_ids = torch.full((len(batch), width), pad, dtype=torch.long)
    token_type_ids = torch.zeros((len(batch), width), dtype=torch.long)
    attention_mask = torch.zeros((len(batch), width), dtype=torch.long)
    for i, (s, t) in enumerate(zip(seqs, types)):
        input_ids[i, :len(s)] = torch.tensor(s)
        token_type_ids[i, :len(t)] = torch.tensor(t)
        attention_mask[i, :len(s)] = 1
    labels = torch.tensor([lab for _, _, lab in batch])
    return {"input_ids": input_ids, "token_type_ids": token_type_ids,
            "attention_mask": attention_mask, "labels": labels}


def hf_course_full_training_loop() -> vd.Findings:
    """Hugging Face course, chapter 3 "A full training" (huggingface/course
    ``chapters/en/chapter3/4.mdx`` @b1160d3a): ``outputs = model(**batch); loss =
    outputs.loss; loss.backward(); optimizer.step(); lr_scheduler.step();
    optimizer.zero_grad()``, ``model.train()`` once before the epochs, AdamW,
    ``get_scheduler("linear", num_warmup_steps=0)``, batch 8 of dict batches from a
    padding collator, 3 epochs, then ``model.eval()`` and argmax predictions under
    ``no_grad``. A tiny ``BertForSequenceClassification`` built from a ``BertConfig``
    (2 layers, hidden 64) on made-up MRPC-like sentence pairs in place of the pretrained
    checkpoint, so lr 5e-4 for a model trained from scratch (its 5e-5 fine-tunes).
    Measured: loss 0.69 -> 0.30, evaluation accuracy 0.735 (chance 0.5)."""
    from transformers import BertConfig, BertForSequenceClassification, get_scheduler
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    torch.manual_seed(0)
    config = BertConfig(vocab_size=60, hidden_size=64, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=128,
                        max_position_embeddings=32, num_labels=2)
    model = BertForSequenceClassification(config)
    train_dataloader = DataLoader(_sentence_pairs(1200, 0), shuffle=True, batch_size=8,
                                  collate_fn=_pair_collate, generator=_gen(0))
    eval_dataloader = DataLoader(_sentence_pairs(200, 1), batch_size=8,
                                 collate_fn=_pair_collate)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)
    num_epochs = 3
    num_training_steps = num_epochs * len(train_dataloader)
    lr_scheduler = get_scheduler("linear", optimizer=optimizer, num_warmup_steps=0,
                                 num_training_steps=num_training_steps)
    session = vd.watch(model, loader=train_dataloader)
    model.train()
    for _epoch in range(num_epochs):
        for batch in train_dataloader:
            outputs = model(**batch)
            loss = outputs.loss
            loss.backward()
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()
            session.log(loss=loss)
    model.eval()
    right = total = 0
    for batch in eval_dataloader:
        with torch.no_grad():
            outputs = model(**batch)
        predictions = torch.argmax(outputs.logits, dim=-1)
        right += int((predictions == batch["labels"]).sum())
        total += len(predictions)
    session.log(val_acc=right / total)
    return finish(session)


# --------------------------------------------------------------------------------------
# Lightning-AI/tutorials lightning_examples/mnist-hello-world/hello-world.py
# --------------------------------------------------------------------------------------


def lightning_lit_mnist() -> vd.Findings:
    """Lightning's "Introduction to PyTorch Lightning" (Lightning-AI/tutorials
    ``lightning_examples/mnist-hello-world/hello-world.py`` @02dc56c0), its ``LitMNIST``:
    the data hooks inside the module (``setup`` with ``random_split``,
    ``train_dataloader``/``val_dataloader``), Flatten-Linear-ReLU-Dropout(0.1) x2 -
    Linear, ``log_softmax`` in ``forward``, ``F.nll_loss`` in ``training_step`` through
    ``self(x)``, ``self.log("val_loss")`` and a torchmetrics ``Accuracy`` logged as
    ``val_acc``, Adam lr 2e-4, batch 64. Watched with vizdebug's Lightning callback as
    the README shows. Digits normalised as its ``Normalize((0.1307,), (0.3081,))``; 15
    epochs (its 3 on 55000 images). Measured: loss 2.32 -> 0.67, val_acc 0.88."""
    import logging
    import tempfile

    import lightning as L
    from torchmetrics import Accuracy

    from vizdebug.integrations.lightning import VizdebugCallback

    for name in ("lightning.pytorch", "lightning.fabric", "lightning"):
        logging.getLogger(name).setLevel(logging.ERROR)

    class LitMNIST(L.LightningModule):
        def __init__(self, hidden_size=64, learning_rate=2e-4):
            super().__init__()
            self.hidden_size, self.learning_rate, self.num_classes = hidden_size, learning_rate, 10
            self.model = nn.Sequential(
                nn.Flatten(), nn.Linear(64, hidden_size), nn.ReLU(), nn.Dropout(0.1),
                nn.Linear(hidden_size, hidden_size), nn.ReLU(), nn.Dropout(0.1),
                nn.Linear(hidden_size, self.num_classes))
            self.val_accuracy = Accuracy(task="multiclass", num_classes=10)

        def forward(self, x):
            return F.log_softmax(self.model(x), dim=1)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return F.nll_loss(self(x), y)

        def validation_step(self, batch, batch_idx):
            x, y = batch
            logits = self(x)
            loss = F.nll_loss(logits, y)
            self.val_accuracy.update(torch.argmax(logits, dim=1), y)
            self.log("val_loss", loss, prog_bar=True)
            self.log("val_acc", self.val_accuracy, prog_bar=True)

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=self.learning_rate)

        def setup(self, stage=None):
            xtr, _, ytr, _ = digits_std()
            full = TensorDataset(torch.as_tensor(xtr), torch.as_tensor(ytr))
            self.mnist_train, self.mnist_val = random_split(full, [1100, len(full) - 1100],
                                                            generator=_gen(0))

        def train_dataloader(self):
            return DataLoader(self.mnist_train, batch_size=64)

        def val_dataloader(self):
            return DataLoader(self.mnist_val, batch_size=64)

    torch.manual_seed(0)
    model = LitMNIST()
    cb = VizdebugCallback()
    with tempfile.TemporaryDirectory() as root:
        trainer = L.Trainer(accelerator="cpu", devices=1, max_epochs=15, logger=False,
                            enable_checkpointing=False, enable_progress_bar=False,
                            enable_model_summary=False, default_root_dir=root,
                            callbacks=[cb])
        trainer.fit(model)
    session = cb.session
    found = session.findings()
    LAST_METRICS.clear()
    LAST_METRICS.update(last_values(session))
    return vd.Findings(list(found))


# --------------------------------------------------------------------------------------
# pytorch/vision references/classification/train.py (the "new recipe")
# --------------------------------------------------------------------------------------


def torchvision_reference_recipe() -> vd.Findings:
    """torchvision's classification reference (pytorch/vision
    ``references/classification/train.py`` @017e9b99) with the options of its current
    recipe: ``CrossEntropyLoss(label_smoothing=0.1)``, mixup (``RandomMixup``, alpha 0.2,
    in the ``collate_fn``: one-hot targets mixed, so the loss gets probabilities),
    normalisation parameters in a weight-decay-0 group (``norm_weight_decay=0``), SGD
    momentum 0.9 weight decay 2e-5, ``SequentialLR`` of a linear warm-up
    (``start_factor=0.01``, 2 epochs) and ``CosineAnnealingLR``, stepped per epoch;
    ``train_one_epoch`` computing ``output = model(image)`` *before* ``zero_grad``, the
    model EMA (an ``AveragedModel`` with an exponential average) updated every 4 steps
    and reset during warm-up, evaluation of model and EMA under ``inference_mode``.
    A resnet-shaped net on 8x8 digits, batch 32, lr 0.1, 10 epochs. Measured: top-1
    0.50 -> 0.998 (validation loss 2.05 -> 0.54, label smoothing's floor)."""
    from torch.utils.data.dataloader import default_collate

    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits_std()
    num_classes = 10

    def mixup(batch, target, alpha=0.2):
        target = F.one_hot(target, num_classes=num_classes).to(dtype=batch.dtype)
        batch_rolled, target_rolled = batch.roll(1, 0), target.roll(1, 0)
        lam = float(torch._sample_dirichlet(torch.tensor([alpha, alpha]))[0])
        batch = batch * lam + batch_rolled * (1.0 - lam)
        target = target * lam + target_rolled * (1.0 - lam)
        return batch, target

    data_loader = DataLoader(TensorDataset(torch.as_tensor(xtr), torch.as_tensor(ytr)),
                             batch_size=32, shuffle=True, generator=_gen(0),
                             collate_fn=lambda batch: mixup(*default_collate(batch)))
    data_loader_test = DataLoader(TensorDataset(torch.as_tensor(xte), torch.as_tensor(yte)),
                                  batch_size=32)
    model = _TinyResNet(num_classes)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    norm_params, other_params = [], []
    for module in model.modules():
        for p in module.parameters(recurse=False):
            (norm_params if isinstance(module, nn.BatchNorm2d) else other_params).append(p)
    parameters = [{"params": norm_params, "weight_decay": 0.0},
                  {"params": other_params, "weight_decay": 2e-5}]
    optimizer = torch.optim.SGD(parameters, lr=0.1, momentum=0.9, weight_decay=2e-5)
    epochs, warmup = 10, 2
    lr_scheduler = torch.optim.lr_scheduler.SequentialLR(optimizer, schedulers=[
        torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.01, total_iters=warmup),
        torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs - warmup)],
        milestones=[warmup])
    decay = 0.99

    def ema_avg(avg_param, param, num_averaged):
        return decay * avg_param + (1 - decay) * param

    model_ema = torch.optim.swa_utils.AveragedModel(model, avg_fn=ema_avg, use_buffers=True)
    session = vd.watch(model, loader=data_loader)

    def evaluate(net) -> tuple[float, float]:
        net.eval()
        loss_sum = right = n = 0.0
        with torch.inference_mode():
            for image, target in data_loader_test:
                output = net(image)
                loss_sum += criterion(output, target).item() * len(target)
                right += (output.argmax(1) == target).sum().item()
                n += len(target)
        return loss_sum / n, right / n

    for epoch in range(epochs):
        model.train()
        for i, (image, target) in enumerate(data_loader):
            output = model(image)
            optimizer.zero_grad()
            loss = criterion(output, target)
            loss.backward()
            optimizer.step()
            if i % 4 == 0:
                model_ema.update_parameters(model)
                if epoch < warmup:
                    model_ema.n_averaged.fill_(0)
            session.log(loss=loss, lr=optimizer.param_groups[0]["lr"])
        lr_scheduler.step()
        val_loss, val_acc = evaluate(model)
        session.log(val_loss=val_loss, val_acc=val_acc)
        evaluate(model_ema)
    return finish(session)


CONTROLS = [
    Control("examples-regression-poly", examples_regression_poly,
            "bare nn.Linear on a polynomial, get_batch (no loader), fc.zero_grad, hand-written "
            "update, stop at loss < 1e-3; source: pytorch/examples regression/main.py"
            "@1877b870"),
    Control("examples-super-resolution", examples_super_resolution,
            "sub-pixel conv net (PixelShuffle), (low-res, high-res) pairs, MSE, Adam 0.01, "
            "PSNR under no_grad; source: pytorch/examples super_resolution/main.py@271ae40d "
            "model.py@5c2b513a"),
    Control("examples-gcn", examples_gcn,
            "GCN, sparse features and adjacency (spmm), full graph per step, NLLLoss on a "
            "train mask, Adam wd; source: pytorch/examples gcn/main.py@2e70ddad"),
    Control("examples-imagenet-loop", examples_imagenet_loop,
            "imagenet train/validate loop: AverageMeter, top-1/top-5, SGD 0.1 momentum wd, "
            "StepLR, best_acc1, resnet-shaped; source: pytorch/examples imagenet/main.py"
            "@493da930"),
    Control("tutorials-nn-tutorial-fit", tutorials_nn_tutorial_fit,
            "'What is torch.nn really?': Mnist_Logistic, get_data, WrappedDataLoader, "
            "loss_batch/fit (step then zero_grad), SGD 0.5; source: pytorch/tutorials "
            "beginner_source/nn_tutorial.py@764a8d6a"),
    Control("tutorials-bow-classifier", tutorials_bow_classifier,
            "bag-of-words log_softmax classifier, one sentence per step, model.zero_grad, "
            "NLLLoss, SGD 0.1; source: pytorch/tutorials beginner_source/nlp/"
            "deep_learning_tutorial.py@016d0cc0"),
    Control("tutorials-bilstm-crf", tutorials_bilstm_crf,
            "BiLSTM-CRF trained through neg_log_likelihood (forward is Viterbi), forward "
            "algorithm, one sentence per step, SGD wd; source: pytorch/tutorials "
            "beginner_source/nlp/advanced_tutorial.py@546ebc60"),
    Control("tutorials-text-embeddingbag", tutorials_text_sentiment_embeddingbag,
            "(label, text, offsets) batches, EmbeddingBag, SGD lr 5, clip 0.1, StepLR when "
            "val acc stalls; source: pytorch/tutorials beginner_source/"
            "text_sentiment_ngrams_tutorial.py@51309670"),
    Control("tutorials-dynamic-net", tutorials_dynamic_net,
            "five scalar Parameters, random number of weight-shared terms per forward, MSE "
            "sum, SGD 1e-8 momentum, full batch; source: pytorch/tutorials beginner_source/"
            "examples_nn/dynamic_net.py@1d189709"),
    Control("tutorials-polynomial-optim", tutorials_polynomial_optim,
            "x, x^2, x^3 features, Linear + Flatten(0, 1), MSE sum, RMSprop, 2000 full-batch "
            "steps; source: pytorch/tutorials beginner_source/examples_nn/polynomial_optim.py"
            "@96efa19f"),
    Control("d2l-linear-regression-concise", d2l_linear_regression_concise,
            "d2l concise linear regression: synthetic data, batch 10, SGD 0.03, loss at the "
            "noise floor; source: d2l-ai/d2l-en chapter_linear-networks/"
            "linear-regression-concise.md@95eec3f6"),
    Control("d2l-densenet-trainer", d2l_densenet_trainer,
            "d2l DenseNet (lazy layers, concatenating blocks) with d2l.Trainer's fit_epoch "
            "(backward+step under no_grad); source: d2l-ai/d2l-en chapter_convolutional-"
            "modern/densenet.md@03b29ddd"),
    Control("d2l-kaggle-house-price", d2l_kaggle_house_price,
            "d2l house prices: get_dummies table, linear net, MSE on raw dollar prices, Adam "
            "lr 5, log_rmse per epoch; source: d2l-ai/d2l-en chapter_multilayer-perceptrons/"
            "kaggle-house-price.md@71000266"),
    Control("hf-course-full-training", hf_course_full_training_loop,
            "HF course full training loop: BertForSequenceClassification from a config, "
            "model(**batch).loss, AdamW + linear get_scheduler, dict batches; source: "
            "huggingface/course chapters/en/chapter3/4.mdx@b1160d3a"),
    Control("lightning-lit-mnist", lightning_lit_mnist,
            "Lightning LitMNIST (data hooks in the module, log_softmax + nll_loss, "
            "torchmetrics val_acc) with vizdebug's Lightning callback; source: "
            "Lightning-AI/tutorials lightning_examples/mnist-hello-world/hello-world.py"
            "@02dc56c0"),
    Control("torchvision-reference-recipe", torchvision_reference_recipe,
            "torchvision classification recipe: label smoothing, mixup soft targets, no-wd "
            "norm group, warm-up + cosine SequentialLR, forward before zero_grad, EMA; "
            "source: pytorch/vision references/classification/train.py@017e9b99"),
]
