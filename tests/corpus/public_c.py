"""Working public programs ported small (part c): each cited with its repository,
path and commit or URL, keeping its own loop idioms. vizdebug must give none of them a
warning or an error."""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint, checkpoint_sequential
from torch.utils.data import DataLoader, Dataset, TensorDataset, WeightedRandomSampler

import vizdebug as vd

from . import Control
from ._data import digits, digits_std, split
from ._loop import finish


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _digits01():
    """Digits scaled to [0, 1] the way ``transforms.ToTensor()`` scales MNIST."""
    xtr, xte, ytr, yte = digits()
    return xtr / 16.0, xte / 16.0, ytr, yte


# --------------------------------------------------------------------------------------
# pytorch/examples mnist/main.py
# --------------------------------------------------------------------------------------


class _MnistNet(nn.Module):
    """pytorch/examples' MNIST ``Net`` shrunk to 8x8 inputs: two 3x3 convolutions, max
    pool, dropout 0.25, fc1, dropout 0.5, fc2, ``log_softmax``."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(16 * 2 * 2, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def mnist_adadelta_steplr() -> vd.Findings:
    """pytorch/examples ``mnist/main.py`` (f15fac72): its Net (log_softmax output),
    ``F.nll_loss``, Adadelta lr=1.0, StepLR(step_size=1, gamma=0.7) stepped after each
    epoch's test, its ``train``/``test`` functions (test loss summed with
    ``reduction='sum'`` and divided by the dataset size). Digits normalised with the
    training mean/std as its ``Normalize((0.1307,), (0.3081,))`` does. Measured: test
    accuracy 0.93 after 10 epochs (lr 1.0 * 0.7**epoch)."""
    torch.manual_seed(1)
    xtr, xte, ytr, yte = digits_std()
    train_loader = DataLoader(TensorDataset(torch.as_tensor(xtr), torch.as_tensor(ytr)),
                              batch_size=64, shuffle=True, generator=_gen(1))
    test_loader = DataLoader(TensorDataset(torch.as_tensor(xte), torch.as_tensor(yte)),
                             batch_size=1000)
    model = _MnistNet()
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    session = vd.watch(model, loader=train_loader)

    def train() -> None:
        model.train()
        for data, target in train_loader:
            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target)
            loss.backward()
            optimizer.step()
            session.log(loss=loss)

    def test() -> None:
        model.eval()
        test_loss, correct = 0.0, 0
        with torch.no_grad():
            for data, target in test_loader:
                output = model(data)
                test_loss += F.nll_loss(output, target, reduction="sum").item()
                pred = output.argmax(dim=1, keepdim=True)
                correct += pred.eq(target.view_as(pred)).sum().item()
        test_loss /= len(test_loader.dataset)
        session.log(val_loss=test_loss, val_acc=correct / len(test_loader.dataset))

    for _ in range(10):
        train()
        test()
        scheduler.step()
    return finish(session)


# --------------------------------------------------------------------------------------
# pytorch/tutorials beginner_source/blitz/cifar10_tutorial.py
# --------------------------------------------------------------------------------------


class _BlitzNet(nn.Module):
    """The tutorial's ``Net`` (conv 6, pool, conv 16, fc 120, 84, 10) sized for 8x8."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 2)
        self.fc1 = nn.Linear(16 * 2 * 2, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = F.relu(self.conv2(x))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def cifar_tutorial_sgd() -> vd.Findings:
    """PyTorch's "Training a classifier" tutorial (pytorch/tutorials
    ``beginner_source/blitz/cifar10_tutorial.py`` @c53e7d4e): images normalised with
    ``Normalize((0.5,), (0.5,))``, batch size 4, ``CrossEntropyLoss``, SGD lr=0.001
    momentum 0.9, ``running_loss += loss.item()`` printed (here: logged) every N
    mini-batches, accuracy on the test set once at the end. Digits in place of CIFAR-10.
    Measured: test accuracy 0.91 after 8 epochs."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = _digits01()
    xtr, xte = (xtr - 0.5) / 0.5, (xte - 0.5) / 0.5
    trainloader = DataLoader(TensorDataset(torch.as_tensor(xtr), torch.as_tensor(ytr)),
                             batch_size=4, shuffle=True, generator=_gen())
    testloader = DataLoader(TensorDataset(torch.as_tensor(xte), torch.as_tensor(yte)),
                            batch_size=4, shuffle=False)
    net = _BlitzNet()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
    session = vd.watch(net, loader=trainloader)
    for _ in range(8):
        running_loss = 0.0
        for i, (inputs, labels) in enumerate(trainloader, 0):
            optimizer.zero_grad()
            outputs = net(inputs)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
            running_loss += loss.item()
            if i % 100 == 99:
                session.log(running_loss=running_loss / 100)
                running_loss = 0.0
    correct = total = 0
    with torch.no_grad():
        for images, labels in testloader:
            outputs = net(images)
            _, predicted = torch.max(outputs, 1)
            total += labels.size(0)
            correct += (predicted == labels).sum().item()
    session.log(val_acc=correct / total)
    return finish(session)


# --------------------------------------------------------------------------------------
# d2l-ai/d2l-en: softmax regression from scratch (old PyTorch edition)
# --------------------------------------------------------------------------------------


class _SoftmaxScratch(nn.Module):
    """d2l's ``net``: ``softmax(X.reshape((-1, W.shape[0])) @ W + b)`` with its own
    ``softmax`` (exp / row sum). W and b are registered here only so that ``vd.watch``
    has a module to attach to; d2l keeps them as two loose tensors."""

    def __init__(self, num_inputs: int, num_outputs: int) -> None:
        super().__init__()
        self.W = nn.Parameter(torch.normal(0, 0.01, size=(num_inputs, num_outputs)))
        self.b = nn.Parameter(torch.zeros(num_outputs))

    def forward(self, X):
        O = X.reshape((-1, self.W.shape[0])) @ self.W + self.b  # noqa: E741 (d2l's names)
        X_exp = torch.exp(O)
        partition = X_exp.sum(1, keepdim=True)
        return X_exp / partition


def d2l_softmax_regression_scratch() -> vd.Findings:
    """d2l.ai "Implementation of Softmax Regression from Scratch" (d2l-ai/d2l-en
    ``chapter_linear-networks/softmax-regression-scratch.md`` @7be72347): hand-written
    softmax, ``cross_entropy = -log(y_hat[range(len(y_hat)), y])``, ``l.sum().backward()``
    and d2l's ``sgd`` (``with torch.no_grad(): param -= lr * param.grad / batch_size;
    param.grad.zero_()``), lr=0.1, batch 256, ``train_epoch_ch3``'s Accumulator and
    ``evaluate_accuracy`` on the test iterator each epoch. Digits in [0, 1] (ToTensor's
    scale) in place of Fashion-MNIST. Measured: test accuracy 0.92 after 30 epochs."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = _digits01()
    batch_size, lr, num_epochs = 256, 0.1, 30
    train_iter = DataLoader(TensorDataset(torch.as_tensor(xtr), torch.as_tensor(ytr)),
                            batch_size=batch_size, shuffle=True, generator=_gen())
    test_iter = DataLoader(TensorDataset(torch.as_tensor(xte), torch.as_tensor(yte)),
                           batch_size=batch_size)
    net = _SoftmaxScratch(64, 10)

    def cross_entropy(y_hat, y):
        return -torch.log(y_hat[range(len(y_hat)), y])

    def sgd(params, lr, batch_size):
        with torch.no_grad():
            for param in params:
                param -= lr * param.grad / batch_size
                param.grad.zero_()

    def accuracy(y_hat, y):
        return float((y_hat.argmax(axis=1).type(y.dtype) == y).type(y.dtype).sum())

    def evaluate_accuracy(net, data_iter):
        right = total = 0.0
        with torch.no_grad():
            for X, y in data_iter:
                right += accuracy(net(X), y)
                total += y.numel()
        return right / total

    session = vd.watch(net, loader=train_iter)
    for _ in range(num_epochs):
        metric = [0.0, 0.0, 0.0]  # Accumulator(3): loss sum, right, count
        for X, y in train_iter:
            y_hat = net(X)
            l = cross_entropy(y_hat, y)  # noqa: E741 (d2l's name)
            l.sum().backward()
            sgd([net.W, net.b], lr, X.shape[0])
            session.log(loss=l.mean())
            metric = [metric[0] + float(l.sum()), metric[1] + accuracy(y_hat, y),
                      metric[2] + y.numel()]
        session.log(train_acc=metric[1] / metric[2],
                    val_acc=evaluate_accuracy(net, test_iter))
    return finish(session)


# --------------------------------------------------------------------------------------
# d2l-ai/d2l-en: MLP from scratch (d2l 1.0 edition)
# --------------------------------------------------------------------------------------


class _MLPScratch(nn.Module):
    """d2l 1.0's ``MLPScratch``: W1, b1, W2, b2 as ``nn.Parameter`` (randn * sigma),
    its own ``relu`` (max with zeros)."""

    def __init__(self, num_inputs, num_outputs, num_hiddens, sigma=0.01) -> None:
        super().__init__()
        self.num_inputs = num_inputs
        self.W1 = nn.Parameter(torch.randn(num_inputs, num_hiddens) * sigma)
        self.b1 = nn.Parameter(torch.zeros(num_hiddens))
        self.W2 = nn.Parameter(torch.randn(num_hiddens, num_outputs) * sigma)
        self.b2 = nn.Parameter(torch.zeros(num_outputs))

    def forward(self, X):
        X = X.reshape((-1, self.num_inputs))
        H = torch.max(X @ self.W1 + self.b1, torch.zeros_like(X @ self.W1))
        return H @ self.W2 + self.b2


class _D2lSGD:
    """d2l 1.0's hand-written ``SGD``: ``param -= lr * param.grad``; ``zero_grad`` zeroes
    each ``.grad`` in place."""

    def __init__(self, params, lr: float) -> None:
        self.params, self.lr = list(params), lr

    def step(self) -> None:
        for param in self.params:
            param -= self.lr * param.grad

    def zero_grad(self) -> None:
        for param in self.params:
            if param.grad is not None:
                param.grad.zero_()


def d2l_mlp_scratch() -> vd.Findings:
    """d2l.ai "Implementation of Multilayer Perceptrons" from scratch (d2l-ai/d2l-en
    ``chapter_multilayer-perceptrons/mlp-implementation.md`` @1ae7fb10): ``MLPScratch``
    with sigma=0.01, ``F.cross_entropy`` (mean), d2l's hand-written ``SGD`` and its
    ``Trainer.fit_epoch`` order (``training_step``; ``optim.zero_grad()``; ``with
    torch.no_grad(): loss.backward(); optim.step()``), validation loss and accuracy on
    the validation loader in eval mode each epoch; lr=0.1, batch 256 as in the book.
    Measured: validation accuracy 0.92 after 60 epochs."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = _digits01()
    train_dl = DataLoader(TensorDataset(torch.as_tensor(xtr), torch.as_tensor(ytr)),
                          batch_size=256, shuffle=True, generator=_gen())
    val_dl = DataLoader(TensorDataset(torch.as_tensor(xte), torch.as_tensor(yte)),
                        batch_size=256)
    model = _MLPScratch(num_inputs=64, num_outputs=10, num_hiddens=64)
    optim = _D2lSGD(model.parameters(), lr=0.1)
    session = vd.watch(model, loader=train_dl)
    for _ in range(60):
        model.train()
        for X, Y in train_dl:
            loss = F.cross_entropy(model(X), Y, reduction="mean")  # training_step
            optim.zero_grad()
            with torch.no_grad():
                loss.backward()
                optim.step()
            session.log(loss=loss)
        model.eval()
        losses, accs, sizes = [], [], []
        for X, Y in val_dl:
            with torch.no_grad():
                Y_hat = model(X)
                losses.append(float(F.cross_entropy(Y_hat, Y)))
                accs.append(float((Y_hat.argmax(axis=1) == Y).float().mean()))
                sizes.append(len(Y))
        session.log(val_loss=float(np.average(losses, weights=sizes)),
                    val_acc=float(np.average(accs, weights=sizes)))
    return finish(session)


# --------------------------------------------------------------------------------------
# Mixed precision: fp16 autocast + GradScaler (AMP recipe), bf16 autocast on the CPU
# --------------------------------------------------------------------------------------


def _make_model(in_size: int, out_size: int, num_layers: int) -> nn.Sequential:
    """The AMP recipe's ``make_model``: Linear+ReLU layers, then a last Linear."""
    layers: list[nn.Module] = []
    for _ in range(num_layers - 1):
        layers.append(nn.Linear(in_size, in_size))
        layers.append(nn.ReLU())
    layers.append(nn.Linear(in_size, out_size))
    return nn.Sequential(*layers)


def amp_recipe_fp16_gradscaler() -> vd.Findings:
    """PyTorch's Automatic Mixed Precision recipe (pytorch/tutorials
    ``recipes_source/recipes/amp_recipe.py`` @db77dcf6), section "All together":
    ``make_model`` (Linear/ReLU stack), ``MSELoss``, SGD, a list of input batches zipped
    with target batches, ``autocast(enabled=use_amp)`` around forward and loss,
    ``scaler.scale(loss).backward(); scaler.step(opt); scaler.update();
    opt.zero_grad(set_to_none=True)``. On the CPU: ``torch.autocast("cpu",
    dtype=torch.float16)`` (supported by this torch, 2.13) and
    ``torch.amp.GradScaler("cpu")``. The recipe's targets are random noise (it only times
    the loop); here they come from a fixed random teacher network so that the loss can
    fall, and SGD's lr is 0.2 instead of 0.001 so it falls within 400 steps (8 epochs of
    50 batches). Measured: MSE 1.02 -> 0.19."""
    torch.manual_seed(0)
    batch_size, in_size, out_size, num_layers, num_batches, epochs = 64, 64, 16, 3, 50, 8
    teacher = _make_model(in_size, out_size, 2).requires_grad_(False)
    data = [torch.randn(batch_size, in_size) for _ in range(num_batches)]
    targets = [teacher(x) for x in data]
    scale = torch.cat(targets).std()
    targets = [t / scale for t in targets]
    loss_fn = nn.MSELoss()
    use_amp = True
    net = _make_model(in_size, out_size, num_layers)
    opt = torch.optim.SGD(net.parameters(), lr=0.2)
    scaler = torch.amp.GradScaler("cpu", enabled=use_amp)
    session = vd.watch(net)
    for _ in range(epochs):
        for input, target in zip(data, targets):
            with torch.autocast(device_type="cpu", dtype=torch.float16, enabled=use_amp):
                output = net(input)
                loss = loss_fn(output, target)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
            session.log(loss=loss)
    return finish(session)


class _CpuNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def bf16_autocast_cpu_training() -> vd.Findings:
    """The "CPU Training Example" of ``torch.autocast``'s docstring (pytorch/pytorch
    ``torch/amp/autocast_mode.py`` @291bc5ca): ``optimizer.zero_grad()``, forward and
    loss under ``torch.autocast(device_type="cpu", dtype=torch.bfloat16)``,
    ``loss.backward(); optimizer.step()`` outside it, SGD. The docstring's ``Net`` is a
    placeholder: a two-layer MLP on flattened, standardised digits. Measured: validation
    accuracy 0.98 after 6 epochs."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits_std()
    data = DataLoader(TensorDataset(torch.as_tensor(xtr), torch.as_tensor(ytr)),
                      batch_size=32, shuffle=True, generator=_gen())
    model = _CpuNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    session = vd.watch(model, loader=data)
    xv, yv = torch.as_tensor(xte), torch.as_tensor(yte)
    for _ in range(6):
        model.train()
        for input, target in data:
            optimizer.zero_grad()
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                output = model(input)
                loss = loss_fn(output, target)
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
        model.eval()
        with torch.no_grad(), torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            out = model(xv)
            session.log(val_loss=float(loss_fn(out.float(), yv)),
                        val_acc=float((out.argmax(1) == yv).float().mean()))
    return finish(session)


# --------------------------------------------------------------------------------------
# Gradient accumulation (huggingface/accelerate docs, the plain-PyTorch loop)
# --------------------------------------------------------------------------------------


def gradient_accumulation_plain_loop() -> vd.Findings:
    """The plain PyTorch loop that accelerate's gradient-accumulation guide starts from
    (huggingface/accelerate ``docs/source/usage_guides/gradient_accumulation.md``
    @9b9e5ff8): ``loss = loss / gradient_accumulation_steps; loss.backward()`` every
    batch, ``optimizer.step(); scheduler.step(); optimizer.zero_grad()`` when ``(index +
    1) % gradient_accumulation_steps == 0``. Its model, optimizer and scheduler are
    placeholders: an MLP on standardised digits, AdamW and a linear decay per optimizer
    step; 4 micro-batches of 16 per step. The logged loss is the micro-batch's loss
    before the division. Measured: validation accuracy 0.97 after 8 epochs."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits_std()
    training_dataloader = DataLoader(
        TensorDataset(torch.as_tensor(xtr.reshape(len(xtr), -1)), torch.as_tensor(ytr)),
        batch_size=16, shuffle=True, generator=_gen())
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    loss_function = nn.CrossEntropyLoss()
    gradient_accumulation_steps, epochs = 4, 8
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    total = epochs * len(training_dataloader) // gradient_accumulation_steps
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1 - s / (total + 1))
    xv, yv = torch.as_tensor(xte.reshape(len(xte), -1)), torch.as_tensor(yte)
    session = vd.watch(model, loader=training_dataloader)
    for _ in range(epochs):
        model.train()
        for index, batch in enumerate(training_dataloader):
            inputs, targets = batch
            outputs = model(inputs)
            loss = loss_function(outputs, targets)
            session.log(loss=loss)
            loss = loss / gradient_accumulation_steps
            loss.backward()
            if (index + 1) % gradient_accumulation_steps == 0:
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
        model.eval()
        with torch.no_grad():
            out = model(xv)
        session.log(val_loss=float(loss_function(out, yv)),
                    val_acc=float((out.argmax(1) == yv).float().mean()))
    return finish(session)


# --------------------------------------------------------------------------------------
# Gradient checkpointing: reentrant (memonger tutorial) and non-reentrant (per block)
# --------------------------------------------------------------------------------------


def checkpoint_sequential_reentrant() -> vd.Findings:
    """The checkpointing tutorial of prigoyal/pytorch_memonger
    (``tutorial/Checkpointing_for_PyTorch_models.ipynb`` @1cb77c88): an ``nn.Sequential``
    of conv/BatchNorm/ReLU layers run through ``checkpoint_sequential(model, chunks,
    input_var)`` with ``input_var.requires_grad = True`` (what the reentrant
    implementation needs for the first segment's parameters to get gradients), here
    with ``use_reentrant=True`` spelled out; trained on standardised digits with SGD
    momentum. Measured: validation accuracy 0.99 after 6 epochs."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits_std()
    train_loader = DataLoader(TensorDataset(torch.as_tensor(xtr), torch.as_tensor(ytr)),
                              batch_size=32, shuffle=True, generator=_gen())
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1, stride=2), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Flatten(), nn.Linear(32 * 4 * 4, 10),
    )
    chunks = 2
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    xv, yv = torch.as_tensor(xte), torch.as_tensor(yte)
    session = vd.watch(model, loader=train_loader)
    for _ in range(6):
        model.train()
        for x, target in train_loader:
            input_var = x.clone().requires_grad_(True)
            output = checkpoint_sequential(model, chunks, input_var, use_reentrant=True)
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
        model.eval()
        with torch.no_grad():
            out = model(xv)
        session.log(val_loss=float(criterion(out, yv)),
                    val_acc=float((out.argmax(1) == yv).float().mean()))
    return finish(session)


class _Block(nn.Module):
    """A pre-norm residual MLP block: ``x + mlp(norm(x))``."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class _CheckpointedNet(nn.Module):
    def __init__(self, dim: int = 64, depth: int = 3, use_checkpoint: bool = True) -> None:
        super().__init__()
        self.embed = nn.Linear(64, dim)
        self.blocks = nn.ModuleList(_Block(dim) for _ in range(depth))
        self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 10))
        self.use_checkpoint = use_checkpoint

    def forward(self, x):
        hidden = self.embed(x.flatten(1))
        for block in self.blocks:
            if self.use_checkpoint and self.training:
                hidden = checkpoint(block, hidden, use_reentrant=False)
            else:
                hidden = block(hidden)
        return self.head(hidden)


def checkpoint_blocks_nonreentrant() -> vd.Findings:
    """Per-block activation checkpointing as dongzhuoyao/tao-research-skills'
    ``gpu-training-acceleration/references/gradient-checkpointing.md`` (@bf43fa42)
    writes it: ``for block in self.blocks: hidden = torch.utils.checkpoint.checkpoint(
    block, hidden, ..., use_reentrant=False)`` when enabled (training only), plain
    ``block(hidden)`` otherwise; residual pre-norm MLP blocks on flattened standardised
    digits, AdamW. Measured: validation accuracy 0.98 after 6 epochs."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits_std()
    train_loader = DataLoader(TensorDataset(torch.as_tensor(xtr), torch.as_tensor(ytr)),
                              batch_size=32, shuffle=True, generator=_gen())
    model = _CheckpointedNet()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    xv, yv = torch.as_tensor(xte), torch.as_tensor(yte)
    session = vd.watch(model, loader=train_loader)
    for _ in range(6):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
        model.eval()
        with torch.no_grad():
            out = model(xv)
        session.log(val_loss=float(F.cross_entropy(out, yv)),
                    val_acc=float((out.argmax(1) == yv).float().mean()))
    return finish(session)


# --------------------------------------------------------------------------------------
# milesial/Pytorch-UNet: a tiny U-Net on synthetic shapes
# --------------------------------------------------------------------------------------


class _DoubleConv(nn.Module):
    """(convolution => [BN] => ReLU) * 2, as in Pytorch-UNet's ``unet_parts.py``."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 3, padding=1),
            nn.BatchNorm2d(out_channels), nn.ReLU(inplace=True),
            nn.Conv2d(out_channels, out_channels, 3, padding=1),
            nn.BatchNorm2d(out_channels), nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.double_conv(x)


class _Down(nn.Module):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), _DoubleConv(in_channels,
                                                                        out_channels))

    def forward(self, x):
        return self.maxpool_conv(x)


class _Up(nn.Module):
    """Bilinear upsampling, concatenation with the skip connection, DoubleConv."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.conv = _DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        return self.conv(torch.cat([x2, x1], dim=1))


class _UNet(nn.Module):
    def __init__(self, n_channels: int = 1, n_classes: int = 3) -> None:
        super().__init__()
        self.n_channels, self.n_classes = n_channels, n_classes
        self.inc = _DoubleConv(n_channels, 8)
        self.down1 = _Down(8, 16)
        self.down2 = _Down(16, 16)
        self.up1 = _Up(32, 8)
        self.up2 = _Up(16, 8)
        self.outc = nn.Conv2d(8, n_classes, kernel_size=1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        return self.outc(x)


class _Shapes(Dataset):
    """16x16 grey images with a square (class 1) and a disc (class 2) on a noisy
    background; masks (H, W) of class indices. Items are dicts, like BasicDataset's."""

    def __init__(self, n: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        yy, xx = np.mgrid[:16, :16]
        imgs = np.zeros((n, 1, 16, 16), np.float32)
        masks = np.zeros((n, 16, 16), np.int64)
        for i in range(n):
            img = rng.normal(0.2, 0.05, (16, 16))
            m = np.zeros((16, 16), np.int64)
            s, r0, c0 = rng.integers(3, 6), rng.integers(0, 11), rng.integers(0, 11)
            m[r0:r0 + s, c0:c0 + s] = 1
            rad, cy, cx = rng.uniform(2, 3.5), rng.uniform(3, 13), rng.uniform(3, 13)
            m[(yy - cy) ** 2 + (xx - cx) ** 2 <= rad ** 2] = 2
            img[m == 1] += 0.6
            img[m == 2] += 0.4
            imgs[i, 0], masks[i] = img, m
        self.imgs, self.masks = torch.as_tensor(imgs), torch.as_tensor(masks)

    def __len__(self) -> int:
        return len(self.imgs)

    def __getitem__(self, i: int):
        return {"image": self.imgs[i], "mask": self.masks[i]}


def unet_segmentation_shapes() -> vd.Findings:
    """milesial/Pytorch-UNet ``train.py`` (@07debeb9) with its ``unet/unet_parts.py``
    blocks (DoubleConv with BatchNorm, Down, bilinear Up, OutConv), shrunk to two levels:
    ``n_classes > 1`` so ``CrossEntropyLoss`` on per-pixel logits against (N, H, W)
    long masks, ``RMSprop(lr=0.001, weight_decay=1e-8, momentum=0.9)``,
    ``ReduceLROnPlateau('min', patience=2)`` stepped on the validation cross entropy
    every ``len(dataset) // (10 * batch_size)`` steps, ``optimizer.zero_grad();
    loss.backward(); clip_grad_value_(net.parameters(), 0.1); optimizer.step()``,
    ``epoch_loss += loss.item()``; synthetic squares and discs in place of the Carvana
    images. Batch size 2 (the script's default is 1). Measured: training loss 1.47 ->
    0.005, validation cross entropy 0.007, pixel accuracy 0.998 after 3 epochs."""
    torch.manual_seed(0)
    dataset = _Shapes(300, seed=0)
    n_val = int(len(dataset) * 0.1)
    train, val = torch.utils.data.random_split(dataset, [len(dataset) - n_val, n_val],
                                               generator=_gen())
    batch_size = 2
    train_loader = DataLoader(train, batch_size=batch_size, shuffle=True, generator=_gen())
    val_loader = DataLoader(val, batch_size=batch_size, shuffle=False, drop_last=True)
    net = _UNet(n_channels=1, n_classes=3)
    optimizer = torch.optim.RMSprop(net.parameters(), lr=0.001, weight_decay=1e-8,
                                    momentum=0.9)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, "min", patience=2)
    criterion = nn.CrossEntropyLoss()

    def eval_net() -> tuple[float, float]:
        net.eval()
        tot, right, pixels = 0.0, 0, 0
        with torch.no_grad():
            for batch in val_loader:
                pred = net(batch["image"])
                tot += F.cross_entropy(pred, batch["mask"]).item()
                right += int((pred.argmax(1) == batch["mask"]).sum())
                pixels += batch["mask"].numel()
        net.train()
        return tot / len(val_loader), right / pixels

    session = vd.watch(net, loader=train_loader)
    global_step = 0
    for _ in range(3):
        net.train()
        epoch_loss = 0.0
        for batch in train_loader:
            imgs, true_masks = batch["image"], batch["mask"]
            masks_pred = net(imgs)
            loss = criterion(masks_pred, true_masks)
            epoch_loss += loss.item()
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_value_(net.parameters(), 0.1)
            optimizer.step()
            session.log(loss=loss)
            global_step += 1
            if global_step % (len(dataset) // (10 * batch_size)) == 0:
                val_score, pixel_acc = eval_net()
                scheduler.step(val_score)
                session.log(val_loss=val_score, val_acc=pixel_acc)
    return finish(session)


# --------------------------------------------------------------------------------------
# Imbalanced data: WeightedRandomSampler (ptrblck's recipe) and weighted CrossEntropyLoss
# --------------------------------------------------------------------------------------


def _imbalanced_table(n: int = 1200, seed: int = 0):
    """A two-class table with a 9:1 imbalance; the minority class is shifted on a few
    columns."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.1).astype(np.int64)
    x = rng.normal(size=(n, 8)).astype(np.float32)
    x[y == 1, :3] += 1.5
    return x, y


def weighted_random_sampler_rebalance() -> vd.Findings:
    """ptrblck's recipe for imbalanced classes on the PyTorch forums
    (https://discuss.pytorch.org/t/how-to-handle-imbalanced-classes/11264), as copied in
    fclairec/geometric-ifc ``test.py`` (@8492e567): ``class_sample_count`` per class,
    ``weight = 1. / class_sample_count``, ``samples_weight = weight[target]``,
    ``WeightedRandomSampler(samples_weight, len(samples_weight))`` passed as the
    loader's ``sampler``, 9:1 data. The recipe stops at printing each batch's 0/1 counts;
    here a small MLP trains on those balanced batches (Adam, CrossEntropyLoss) and is
    scored on an untouched imbalanced test split (``vd.check_predictions`` on it).
    Measured: test accuracy 0.86 after 10 epochs (loss 0.78 -> 0.45)."""
    torch.manual_seed(0)
    x, y = _imbalanced_table()
    xtr, xte, ytr, yte = split(x, y)
    class_sample_count = np.array([len(np.where(ytr == t)[0]) for t in np.unique(ytr)])
    weight = 1.0 / class_sample_count
    samples_weight = torch.from_numpy(np.array([weight[t] for t in ytr])).double()
    sampler = WeightedRandomSampler(samples_weight, len(samples_weight), generator=_gen())
    train_dataset = TensorDataset(torch.as_tensor(xtr), torch.from_numpy(ytr).long())
    train_loader = DataLoader(train_dataset, batch_size=64, sampler=sampler)
    checks = vd.check_batch(next(iter(train_loader)))
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    criterion = nn.CrossEntropyLoss()
    xv, yv = torch.as_tensor(xte), torch.as_tensor(yte)
    session = vd.watch(model, loader=train_loader)
    for _ in range(10):
        model.train()
        for data, target in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(data), target)
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
        model.eval()
        with torch.no_grad():
            out = model(xv)
        session.log(val_loss=float(criterion(out, yv)),
                    val_acc=float((out.argmax(1) == yv).float().mean()))
    pred = out.argmax(1).numpy()
    checks = [*checks, *vd.check_predictions(yte, pred)]
    return finish(session, vd.Findings(checks))


class _MulticlassClassification(nn.Module):
    """Akshaj Verma's ``MulticlassClassification``: three Linear+BatchNorm+ReLU layers
    (512, 128, 64 wide in the post; 64, 32, 16 here), dropout 0.2, a linear output."""

    def __init__(self, num_feature: int, num_class: int) -> None:
        super().__init__()
        self.layer_1 = nn.Linear(num_feature, 64)
        self.layer_2 = nn.Linear(64, 32)
        self.layer_3 = nn.Linear(32, 16)
        self.layer_out = nn.Linear(16, num_class)
        self.relu = nn.ReLU()
        self.dropout = nn.Dropout(p=0.2)
        self.batchnorm1 = nn.BatchNorm1d(64)
        self.batchnorm2 = nn.BatchNorm1d(32)
        self.batchnorm3 = nn.BatchNorm1d(16)

    def forward(self, x):
        x = self.relu(self.batchnorm1(self.layer_1(x)))
        x = self.relu(self.batchnorm2(self.layer_2(x)))
        x = self.dropout(x)
        x = self.relu(self.batchnorm3(self.layer_3(x)))
        x = self.dropout(x)
        return self.layer_out(x)


def class_weighted_ce_table() -> vd.Findings:
    """Akshaj Verma, "PyTorch [Tabular] — Multiclass Classification" (Towards Data
    Science, https://towardsdatascience.com/pytorch-tabular-multiclass-classification-9f8211a123ab;
    its imports are copied in arturfabricio/aircraft-detection ``src/multi_class.py``
    @58944374): MinMaxScaler on the features, ``class_weights = 1./class_count`` given to
    both ``WeightedRandomSampler`` and ``nn.CrossEntropyLoss(weight=class_weights)``,
    Adam lr=0.0007, batch 16, per-epoch validation in ``model.eval()`` under
    ``torch.no_grad()`` with its ``multi_acc`` (log_softmax then argmax), predictions on
    the test split at the end, on which the practitioner calls ``vd.check_predictions``.
    A synthetic 4-class table with 60/25/10/5 % classes in place of the red-wine data.
    Measured: test accuracy 0.99 after 6 epochs."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    n = 1600
    y = rng.choice(4, size=n, p=[0.6, 0.25, 0.1, 0.05]).astype(np.int64)
    centers = rng.normal(scale=1.6, size=(4, 11))
    x = (centers[y] + rng.normal(size=(n, 11))) * rng.uniform(1, 50, size=11)
    xtr, xte, ytr, yte = split(x.astype(np.float32), y, test=0.2)
    lo, hi = xtr.min(0), xtr.max(0)
    xtr, xte = (xtr - lo) / (hi - lo), (xte - lo) / (hi - lo)
    class_count = np.bincount(ytr)
    class_weights = 1.0 / torch.tensor(class_count, dtype=torch.float)
    class_weights_all = class_weights[torch.as_tensor(ytr)]
    weighted_sampler = WeightedRandomSampler(weights=class_weights_all,
                                             num_samples=len(class_weights_all),
                                             replacement=True, generator=_gen())
    train_dataset = TensorDataset(torch.as_tensor(xtr), torch.as_tensor(ytr))
    val_dataset = TensorDataset(torch.as_tensor(xte), torch.as_tensor(yte))
    train_loader = DataLoader(train_dataset, batch_size=16, sampler=weighted_sampler)
    val_loader = DataLoader(val_dataset, batch_size=1)
    model = _MulticlassClassification(num_feature=11, num_class=4)
    criterion = nn.CrossEntropyLoss(weight=class_weights)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0007)

    def multi_acc(y_pred, y_test):
        y_pred_tags = torch.log_softmax(y_pred, dim=1).argmax(dim=1)
        return (y_pred_tags == y_test).float().mean()

    session = vd.watch(model, loader=train_loader)
    for _ in range(6):
        model.train()
        for X_train_batch, y_train_batch in train_loader:
            optimizer.zero_grad()
            y_train_pred = model(X_train_batch)
            train_loss = criterion(y_train_pred, y_train_batch)
            train_acc = multi_acc(y_train_pred, y_train_batch)
            train_loss.backward()
            optimizer.step()
            session.log(loss=train_loss, train_acc=train_acc)
        with torch.no_grad():
            val_epoch_loss = val_epoch_acc = 0.0
            model.eval()
            for X_val_batch, y_val_batch in val_loader:
                y_val_pred = model(X_val_batch)
                val_epoch_loss += criterion(y_val_pred, y_val_batch).item()
                val_epoch_acc += multi_acc(y_val_pred, y_val_batch).item()
        session.log(val_loss=val_epoch_loss / len(val_loader),
                    val_acc=val_epoch_acc / len(val_loader))
    y_pred_list = []
    with torch.no_grad():
        model.eval()
        for X_batch, _ in val_loader:
            y_pred_list.append(int(torch.log_softmax(model(X_batch), dim=1).argmax(1)))
    checks = vd.check_predictions(yte, np.array(y_pred_list))
    return finish(session, checks)


# --------------------------------------------------------------------------------------
# sthalles/SimCLR: NT-Xent (info_nce_loss) on two augmentations of digits
# --------------------------------------------------------------------------------------


class _TwoViews(Dataset):
    """SimCLR's ``ContrastiveLearningViewGenerator``: ``n_views`` random augmentations
    of each image (here: a random shift of up to one pixel, contrast jitter, noise)."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, n_views: int = 2) -> None:
        self.images, self.labels = torch.as_tensor(images), torch.as_tensor(labels)
        self.n_views = n_views

    def __len__(self) -> int:
        return len(self.images)

    def _augment(self, img: torch.Tensor) -> torch.Tensor:
        padded = F.pad(img, (1, 1, 1, 1))
        dy, dx = torch.randint(0, 3, (2,)).tolist()
        out = padded[:, dy:dy + 8, dx:dx + 8]
        out = out * torch.empty(1).uniform_(0.7, 1.3)
        return out + 0.1 * torch.randn_like(out)

    def __getitem__(self, i: int):
        return [self._augment(self.images[i]) for _ in range(self.n_views)], self.labels[i]


class _SimCLRNet(nn.Module):
    """A small conv backbone whose ``fc`` is replaced by SimCLR's projection MLP
    (``Linear(dim_mlp, dim_mlp), ReLU, fc``), as ``ResNetSimCLR`` does."""

    def __init__(self, out_dim: int = 32) -> None:
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 64, 3, padding=1, stride=2), nn.BatchNorm2d(64), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.head = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, out_dim))

    def forward(self, x):
        return self.head(self.backbone(x))


def simclr_nt_xent_digits() -> vd.Findings:
    """sthalles/SimCLR ``simclr.py`` (@727cbae1): ``info_nce_loss`` (normalised features,
    similarity matrix, diagonal masked out, positives first, ``logits / temperature``
    with temperature 0.07, CrossEntropyLoss against zeros), ``images = torch.cat(images,
    dim=0)`` over the two views, ``optimizer.zero_grad(); loss.backward();
    optimizer.step()`` (its GradScaler is disabled without ``--fp16-precision``), Adam
    lr=3e-4 weight_decay=1e-4, cosine schedule stepped per epoch after the warm-up epochs
    (none of the shrunk run's 8 epochs reach 10), top-1 accuracy of the contrastive task
    logged every few steps. Digits standardised, batch 64 with ``drop_last=True``.
    Measured: NT-Xent 4.7 -> 1.2, contrastive top-1 0.73; a logistic-regression probe on
    the frozen backbone features (``_probe_accuracy``) reaches 0.94 on the test split."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits_std()
    batch_size, n_views, temperature, epochs = 64, 2, 0.07, 8
    train_loader = DataLoader(_TwoViews(xtr, ytr, n_views), batch_size=batch_size,
                              shuffle=True, drop_last=True, generator=_gen())
    model = _SimCLRNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=len(train_loader))
    criterion = nn.CrossEntropyLoss()

    def info_nce_loss(features):
        labels = torch.cat([torch.arange(batch_size) for _ in range(n_views)], dim=0)
        labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
        features = F.normalize(features, dim=1)
        similarity_matrix = torch.matmul(features, features.T)
        mask = torch.eye(labels.shape[0], dtype=torch.bool)
        labels = labels[~mask].view(labels.shape[0], -1)
        similarity_matrix = similarity_matrix[~mask].view(similarity_matrix.shape[0], -1)
        positives = similarity_matrix[labels.bool()].view(labels.shape[0], -1)
        negatives = similarity_matrix[~labels.bool()].view(similarity_matrix.shape[0], -1)
        logits = torch.cat([positives, negatives], dim=1)
        labels = torch.zeros(logits.shape[0], dtype=torch.long)
        return logits / temperature, labels

    session = vd.watch(model, loader=train_loader)
    n_iter = 0
    for epoch_counter in range(epochs):
        model.train()
        for images, _ in train_loader:
            images = torch.cat(images, dim=0)
            features = model(images)
            logits, labels = info_nce_loss(features)
            loss = criterion(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
            if n_iter % 5 == 0:
                top1 = (logits.argmax(1) == labels).float().mean()
                session.log(acc_top1=top1)
            n_iter += 1
        if epoch_counter >= 10:
            scheduler.step()
    return finish(session)


def _probe_accuracy(model: _SimCLRNet) -> float:
    """The linear-evaluation check (not part of the corpus run): logistic regression on
    the frozen backbone features."""
    from sklearn.linear_model import LogisticRegression

    xtr, xte, ytr, yte = digits_std()
    model.eval()
    with torch.no_grad():
        ftr = model.backbone(torch.as_tensor(xtr)).numpy()
        fte = model.backbone(torch.as_tensor(xte)).numpy()
    clf = LogisticRegression(max_iter=2000).fit(ftr, ytr)
    return float(clf.score(fte, yte))


# --------------------------------------------------------------------------------------
# udacity/deep-learning-v2-pytorch: denoising autoencoder
# --------------------------------------------------------------------------------------


class _ConvDenoiser(nn.Module):
    """Udacity's ``ConvDenoiser``: conv 32/16/8 with max pooling, transposed convs back
    up, a last conv and a sigmoid; two pooling levels here for 8x8 images."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 16, 3, padding=1)
        self.conv3 = nn.Conv2d(16, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2, 2)
        self.t_conv1 = nn.ConvTranspose2d(8, 16, 2, stride=2)
        self.t_conv2 = nn.ConvTranspose2d(16, 32, 2, stride=2)
        self.conv_out = nn.Conv2d(32, 1, 3, padding=1)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = F.relu(self.conv3(x))
        x = F.relu(self.t_conv1(x))
        x = F.relu(self.t_conv2(x))
        return torch.sigmoid(self.conv_out(x))


def denoising_autoencoder() -> vd.Findings:
    """Udacity's denoising autoencoder solution (udacity/deep-learning-v2-pytorch
    ``autoencoder/denoising-autoencoder/Denoising_Autoencoder_Solution.ipynb``
    @7e8cc710): images in [0, 1], ``noisy_imgs = images + noise_factor *
    torch.randn(*images.shape)`` with noise_factor 0.5 then ``np.clip(.., 0., 1.)``, the
    model sees the noisy images and ``MSELoss`` compares its output with the clean ones,
    Adam lr=0.001, batch 20, ``train_loss += loss.item()*images.size(0)`` per epoch; the
    test images, noised the same way, are denoised at the end (here scored). 12 epochs.
    Measured: MSE 0.18 -> 0.07; test MSE to the clean images 0.058 (noisy input 0.118,
    the mean image 0.074)."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = _digits01()
    train_loader = DataLoader(TensorDataset(torch.as_tensor(xtr), torch.as_tensor(ytr)),
                              batch_size=20, shuffle=True, generator=_gen())
    model = _ConvDenoiser()
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    noise_factor = 0.5
    checks = vd.check_batch(next(iter(train_loader)))
    session = vd.watch(model, loader=train_loader)
    for _ in range(12):
        train_loss = 0.0
        for images, _ in train_loader:
            noisy_imgs = images + noise_factor * torch.randn(*images.shape)
            noisy_imgs = torch.clip(noisy_imgs, 0.0, 1.0)
            optimizer.zero_grad()
            outputs = model(noisy_imgs)
            loss = criterion(outputs, images)
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
            train_loss += loss.item() * images.size(0)
        session.log(epoch_loss=train_loss / len(train_loader.dataset))
    images = torch.as_tensor(xte)
    noisy = torch.clip(images + noise_factor * torch.randn(*images.shape), 0.0, 1.0)
    with torch.no_grad():
        session.log(val_loss=float(criterion(model(noisy), images)))
    return finish(session, checks)


# --------------------------------------------------------------------------------------
# pytorch/tutorials transfer_learning_tutorial.py: a BatchNorm ResNet at batch size 4
# --------------------------------------------------------------------------------------


class _BasicBlock(nn.Module):
    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False),
                                            nn.BatchNorm2d(planes))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + identity)


class _TinyResNet(nn.Module):
    """ResNet-18's layout cut to a stem and two BasicBlocks, ``fc`` replaced by a
    10-way ``nn.Linear`` as the tutorial replaces ``model_ft.fc``."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.layer1 = _BasicBlock(16, 16)
        self.layer2 = _BasicBlock(16, 32, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def transfer_learning_bn_batch4() -> vd.Findings:
    """PyTorch's transfer-learning tutorial (pytorch/tutorials
    ``beginner_source/transfer_learning_tutorial.py`` @74ba612b): a BatchNorm ResNet
    trained with **batch size 4**, ``CrossEntropyLoss``, SGD lr=0.001 momentum 0.9,
    ``StepLR(step_size=7, gamma=0.1)`` stepped once per training phase, and its
    ``train_model``: for each phase ``train``/``val``, ``model.train()``/``model.eval()``,
    ``optimizer.zero_grad()``, forward under ``torch.set_grad_enabled(phase ==
    'train')``, ``running_loss += loss.item() * inputs.size(0)``, ``running_corrects``,
    the best weights deep-copied and loaded at the end. Trained from scratch (no
    pretrained weights here) on standardised digits. Measured: val accuracy 0.95 after
    3 epochs."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits_std()
    image_datasets = {"train": TensorDataset(torch.as_tensor(xtr), torch.as_tensor(ytr)),
                      "val": TensorDataset(torch.as_tensor(xte), torch.as_tensor(yte))}
    dataloaders = {x: DataLoader(image_datasets[x], batch_size=4, shuffle=True,
                                 generator=_gen()) for x in ["train", "val"]}
    dataset_sizes = {x: len(image_datasets[x]) for x in ["train", "val"]}
    model = _TinyResNet()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=7, gamma=0.1)
    session = vd.watch(model, loader=dataloaders["train"])
    best_model_wts, best_acc = copy.deepcopy(model.state_dict()), 0.0
    for _ in range(3):
        for phase in ["train", "val"]:
            if phase == "train":
                model.train()
            else:
                model.eval()
            running_loss, running_corrects = 0.0, 0
            for inputs, labels in dataloaders[phase]:
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    outputs = model(inputs)
                    _, preds = torch.max(outputs, 1)
                    loss = criterion(outputs, labels)
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
                        session.log(loss=loss)
                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels.data)
            if phase == "train":
                scheduler.step()
            epoch_loss = running_loss / dataset_sizes[phase]
            epoch_acc = running_corrects.double() / dataset_sizes[phase]
            if phase == "val":
                session.log(val_loss=epoch_loss, val_acc=float(epoch_acc))
                if epoch_acc > best_acc:
                    best_acc = epoch_acc
                    best_model_wts = copy.deepcopy(model.state_dict())
    model.load_state_dict(best_model_wts)
    return finish(session)


# --------------------------------------------------------------------------------------
# NHWC numpy images, permuted inside the model
# --------------------------------------------------------------------------------------


class _ToChannelMajor(nn.Module):
    """lucaslingle/pytorch_drl's ``ToChannelMajor``: ``x.permute(0, 3, 1, 2)``."""

    def forward(self, x):
        return x.permute(0, 3, 1, 2)


def nhwc_loader_permute_in_forward() -> vd.Findings:
    """Images kept as (N, H, W, C) numpy arrays, as Kaggle notebooks load them
    (``np.stack`` of HWC images), the loader yields NHWC batches, and the network's
    first module permutes them: lucaslingle/pytorch_drl
    ``drl/agents/preprocessing/vision.py`` (@97fc1620) ``ToChannelMajor.forward``
    returns ``x.permute(0, 3, 1, 2)`` and is put in front of a Nature-DQN-style conv
    stack (stride-1 3x3 convolutions here, for 8x8 inputs), ReLU, a linear head; the
    practitioner looks at one batch with ``vd.check_batch``. Digits in [0, 1], Adam,
    CrossEntropyLoss. Measured: validation accuracy 0.97 after 8 epochs."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = _digits01()
    xtr, xte = np.ascontiguousarray(xtr.transpose(0, 2, 3, 1)), \
        np.ascontiguousarray(xte.transpose(0, 2, 3, 1))  # (N, 8, 8, 1)
    train_loader = DataLoader(TensorDataset(torch.from_numpy(xtr), torch.from_numpy(ytr)),
                              batch_size=32, shuffle=True, generator=_gen())
    checks = vd.check_batch(next(iter(train_loader)))
    model = nn.Sequential(
        _ToChannelMajor(),
        nn.Conv2d(1, 16, 3), nn.ReLU(),
        nn.Conv2d(16, 32, 3), nn.ReLU(),
        nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10),
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.CrossEntropyLoss()
    xv, yv = torch.from_numpy(xte), torch.from_numpy(yte)
    session = vd.watch(model, loader=train_loader)
    for _ in range(8):
        model.train()
        for xb, yb in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
        model.eval()
        with torch.no_grad():
            out = model(xv)
        session.log(val_loss=float(criterion(out, yv)),
                    val_acc=float((out.argmax(1) == yv).float().mean()))
    return finish(session, checks)


# --------------------------------------------------------------------------------------
# pytorch/tutorials introyt/trainingyt.py on low-contrast, sky-like crops
# --------------------------------------------------------------------------------------


def _sky_crops(n: int = 2000, side: int = 28, seed: int = 0):
    """Natural-image-like grey crops in a narrow intensity band: a sky brightening
    towards the top, towards the left, a sun glow (radial), or flat haze with cloud
    texture. Smooth gradients of amplitude ~0.12 around 0.55, plus a faint smooth
    texture and sensor noise."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[:side, :side] / (side - 1)
    y = rng.integers(0, 4, size=n)
    out = np.empty((n, 1, side, side), np.float32)
    for i, c in enumerate(y):
        base = rng.uniform(0.45, 0.6)
        amp = rng.uniform(0.15, 0.3)
        if c == 0:
            g = 1 - yy
        elif c == 1:
            g = 1 - xx
        elif c == 2:
            cy, cx = rng.uniform(0.2, 0.8, 2)
            g = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 0.05)
        else:
            g = np.zeros_like(yy)
        coarse = rng.normal(size=(4, 4))
        texture = np.kron(coarse, np.ones((side // 4 + 1, side // 4 + 1)))[:side, :side]
        texture = (texture - texture.mean()) * (0.03 if c == 3 else 0.01)
        img = base + amp * g + texture + rng.normal(0, 0.005, (side, side))
        out[i, 0] = np.clip(img, 0, 1)
    return out, y.astype(np.int64)


class _GarmentClassifier(nn.Module):
    """The tutorial's ``GarmentClassifier`` (conv 6@5x5, pool, conv 16@5x5, fc 120, 84)."""

    def __init__(self, n_classes: int = 4) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 4 * 4, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, n_classes)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 4 * 4)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def low_contrast_sky_crops_cnn() -> vd.Findings:
    """PyTorch's "Training with PyTorch" tutorial (pytorch/tutorials
    ``beginner_source/introyt/trainingyt.py`` @db77dcf6): ``Normalize((0.5,), (0.5,))``,
    batch size 4, ``GarmentClassifier``, ``CrossEntropyLoss``, SGD lr=0.001 momentum 0.9,
    ``train_one_epoch`` reporting ``running_loss`` every N batches, then per epoch the
    validation loss ``avg_vloss`` in ``model.eval()`` under ``torch.no_grad()``. The
    images are 28x28 low-contrast sky-like crops (smooth gradients + texture in a narrow
    intensity band) instead of Fashion-MNIST; the practitioner looks at them with
    ``vd.show_batch`` and ``vd.check_batch`` first. Measured: validation accuracy 0.96
    after 4 epochs."""
    torch.manual_seed(0)
    x, y = _sky_crops()
    x = (x - 0.5) / 0.5
    xtr, xva, ytr, yva = split(x, y, test=0.2)
    training_loader = DataLoader(TensorDataset(torch.as_tensor(xtr), torch.as_tensor(ytr)),
                                 batch_size=4, shuffle=True, generator=_gen())
    validation_loader = DataLoader(TensorDataset(torch.as_tensor(xva), torch.as_tensor(yva)),
                                   batch_size=4, shuffle=False)
    view = vd.show_batch(training_loader, mean=0.5, std=0.5)
    checks = [*view.findings, *vd.check_batch(next(iter(training_loader)), mean=0.5, std=0.5)]
    model = _GarmentClassifier()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    session = vd.watch(model, loader=training_loader)

    def train_one_epoch() -> float:
        running_loss = last_loss = 0.0
        for i, (inputs, labels) in enumerate(training_loader):
            optimizer.zero_grad()
            outputs = model(inputs)
            loss = loss_fn(outputs, labels)
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
            running_loss += loss.item()
            if i % 40 == 39:
                last_loss = running_loss / 40
                running_loss = 0.0
        return last_loss

    for _ in range(4):
        model.train(True)
        train_one_epoch()
        running_vloss, correct = 0.0, 0
        model.eval()
        with torch.no_grad():
            for vinputs, vlabels in validation_loader:
                voutputs = model(vinputs)
                running_vloss += loss_fn(voutputs, vlabels)
                correct += int((voutputs.argmax(1) == vlabels).sum())
        avg_vloss = running_vloss / len(validation_loader)  # (i + 1) batches
        session.log(val_loss=float(avg_vloss), val_acc=correct / len(yva))
    return finish(session, vd.Findings(checks))


# --------------------------------------------------------------------------------------
# skorch NeuralNetClassifier, written out as the plain loop skorch/net.py runs
# --------------------------------------------------------------------------------------


class _ClassifierModule(nn.Module):
    """skorch's README ``MyModule``: dense0 (20 -> 10), ReLU, dropout 0.5, dense1
    (10 -> 10), ReLU, output (10 -> 2), ``softmax(dim=-1)``."""

    def __init__(self, num_units: int = 10, nonlin=None) -> None:
        super().__init__()
        self.dense0 = nn.Linear(20, num_units)
        self.nonlin = nonlin if nonlin is not None else nn.ReLU()
        self.dropout = nn.Dropout(0.5)
        self.dense1 = nn.Linear(num_units, num_units)
        self.output = nn.Linear(num_units, 2)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, X):
        X = self.nonlin(self.dense0(X))
        X = self.dropout(X)
        X = self.nonlin(self.dense1(X))
        return self.softmax(self.output(X))


def skorch_classifier_loop() -> vd.Findings:
    """What ``NeuralNetClassifier(MyModule, max_epochs=10, lr=0.1,
    iterator_train__shuffle=True).fit(X, y)`` runs, written out from skorch-dev/skorch
    ``skorch/net.py`` (@b5e28003) and ``skorch/classifier.py``, 50 epochs: a stratified 80/20
    ``ValidSplit(5)``; ``fit_loop`` over epochs; ``train_step`` → ``module.train()``,
    ``optimizer.zero_grad()``, ``y_pred = module(Xi)``, ``get_loss`` (the classifier's
    criterion is ``NLLLoss`` and its ``get_loss`` takes ``torch.log(y_pred + eps)`` of
    the module's softmax probabilities), ``loss.backward()``, ``optimizer.step()``; SGD
    (skorch's default) lr=0.1, batch size 128; ``validation_step`` under
    ``module.eval()`` and ``torch.no_grad()``; ``train_loss``/``valid_loss`` averaged by
    batch size and ``valid_acc`` each epoch. The README's data:
    ``make_classification(1000, 20, n_informative=10, random_state=0)``. Measured:
    valid_acc 0.76 after 50 epochs (valid_loss 0.48)."""
    from sklearn.datasets import make_classification
    from sklearn.model_selection import StratifiedKFold

    torch.manual_seed(0)
    X, y = make_classification(1000, 20, n_informative=10, random_state=0)
    X, y = X.astype(np.float32), y.astype(np.int64)
    train_idx, valid_idx = next(iter(StratifiedKFold(5).split(X, y)))
    dataset_train = TensorDataset(torch.as_tensor(X[train_idx]), torch.as_tensor(y[train_idx]))
    dataset_valid = TensorDataset(torch.as_tensor(X[valid_idx]), torch.as_tensor(y[valid_idx]))
    iterator_train = DataLoader(dataset_train, batch_size=128, shuffle=True, generator=_gen())
    iterator_valid = DataLoader(dataset_valid, batch_size=128, shuffle=False)
    module_ = _ClassifierModule()
    criterion_ = nn.NLLLoss()
    optimizer_ = torch.optim.SGD(module_.parameters(), lr=0.1)

    def get_loss(y_pred, y_true):
        eps = torch.finfo(y_pred.dtype).eps
        return criterion_(torch.log(y_pred + eps), y_true)

    session = vd.watch(module_, loader=iterator_train)
    for _ in range(50):  # fit_loop
        train_losses, train_sizes = [], []
        for Xi, yi in iterator_train:  # run_single_epoch(training=True)
            module_.train()
            optimizer_.zero_grad()
            y_pred = module_(Xi)
            loss = get_loss(y_pred, yi)
            loss.backward()
            optimizer_.step()
            session.log(loss=loss)
            train_losses.append(loss.item())
            train_sizes.append(len(Xi))
        valid_losses, valid_sizes, correct = [], [], 0
        for Xi, yi in iterator_valid:  # run_single_epoch(training=False)
            module_.eval()
            with torch.no_grad():
                y_pred = module_(Xi)
                valid_losses.append(get_loss(y_pred, yi).item())
            valid_sizes.append(len(Xi))
            correct += int((y_pred.argmax(1) == yi).sum())
        session.log(val_loss=float(np.average(valid_losses, weights=valid_sizes)),
                    val_acc=correct / len(dataset_valid))
    return finish(session)


# --------------------------------------------------------------------------------------
# Lightning's LitAutoEncoder (README), trained in a plain loop
# --------------------------------------------------------------------------------------


class _LitAutoEncoder(nn.Module):
    """The README's ``LitAutoEncoder`` (encoder 784 -> 128 -> 3, decoder 3 -> 128 -> 784)
    as a plain ``nn.Module``, for 64-pixel digits; ``forward`` returns the embedding as
    the README's does."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(8 * 8, 128), nn.ReLU(), nn.Linear(128, 3))
        self.decoder = nn.Sequential(nn.Linear(3, 128), nn.ReLU(), nn.Linear(128, 8 * 8))

    def forward(self, x):
        return self.encoder(x)

    def training_step(self, batch, batch_idx):
        x, _ = batch
        x = x.view(x.size(0), -1)
        z = self.encoder(x)
        x_hat = self.decoder(z)
        return F.mse_loss(x_hat, x)

    validation_step = training_step

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def lightning_autoencoder_plain_loop() -> vd.Findings:
    """Lightning's README example (Lightning-AI/pytorch-lightning ``README.md``
    @c0c2000e): ``LitAutoEncoder`` with ``training_step`` (flatten, encode to 3 numbers,
    decode, ``F.mse_loss(x_hat, x)``), ``configure_optimizers`` → Adam lr=1e-3, a
    ``random_split`` into train and val and ``DataLoader(train)`` / ``DataLoader(val)``
    with the default batch size of 1, run in the loop that ``Trainer.fit`` runs under
    automatic optimisation: ``optimizer.zero_grad()``, ``training_step``,
    ``loss.backward()``, ``optimizer.step()``, then the validation loop in eval mode
    under ``torch.no_grad()`` at the end of each epoch. Digits in [0, 1] (ToTensor's
    scale). Measured: training MSE 0.21 (first step) -> val MSE 0.036 after 2 epochs
    (the mean image scores 0.074)."""
    torch.manual_seed(0)
    x, _, y, _ = _digits01()
    dataset = TensorDataset(torch.as_tensor(x), torch.as_tensor(y))
    train, val = torch.utils.data.random_split(dataset, [1147, 200], generator=_gen())
    train_loader = DataLoader(train)
    val_loader = DataLoader(val)
    autoencoder = _LitAutoEncoder()
    optimizer = autoencoder.configure_optimizers()
    session = vd.watch(autoencoder, loader=train_loader)
    for _ in range(2):
        autoencoder.train()
        for batch_idx, batch in enumerate(train_loader):
            optimizer.zero_grad()
            loss = autoencoder.training_step(batch, batch_idx)
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
        autoencoder.eval()
        with torch.no_grad():
            val_losses = [float(autoencoder.validation_step(b, i))
                          for i, b in enumerate(val_loader)]
        session.log(val_loss=float(np.mean(val_losses)))
    return finish(session)


# --------------------------------------------------------------------------------------
# A first Linear followed by BatchNorm on unnormalised tabular inputs (LHY HW1)
# --------------------------------------------------------------------------------------


class _Linearmodel(nn.Module):
    """fyk-gif/LHY_HW1 ``model.py``: Linear(in_dim, 128) → BatchNorm1d(128) → ReLU →
    Linear(128, 1), ``squeeze(1)``."""

    def __init__(self, in_dim: int = 93) -> None:
        super().__init__()
        self.layer1 = nn.Linear(in_dim, 128)
        self.bn = nn.BatchNorm1d(128)
        self.relu = nn.ReLU()
        self.outlayer = nn.Linear(128, 1)

    def forward(self, x):
        out = self.relu(self.bn(self.layer1(x)))
        return self.outlayer(out).squeeze(1)


def _covid_like_table(n: int = 1400, seed: int = 0):
    """A table shaped like ML2021 HW1's covid.train.csv: 40 one-hot state columns and
    53 survey columns in percent (0-100, unscaled, as the CSV has them), among them
    three days of ``tested_positive``; the target is the fourth day's."""
    rng = np.random.default_rng(seed)
    state = rng.integers(0, 40, size=n)
    onehot = np.eye(40)[state]
    latent = rng.normal(size=(n, 4))
    load = rng.normal(size=(4, 50))
    survey = 50 + 12 * np.tanh(latent @ load / 2) + rng.normal(0, 2, (n, 50))
    positive = 10 + 4 * latent[:, 0] + 2 * latent[:, 1] + 0.2 * (state % 5)
    days = np.stack([positive + rng.normal(0, 0.3, n) for _ in range(3)], 1)
    target = positive + rng.normal(0, 0.3, n)
    x = np.concatenate([onehot, survey, days], 1).astype(np.float32)
    return x, target.astype(np.float32)


def lhy_hw1_linear_batchnorm_raw() -> vd.Findings:
    """fyk-gif/LHY_HW1 (``model.py``, ``train.py``, ``load_data.py`` @1542813e), the
    COVID-19 case regression of Hung-yi Lee's ML2021 homework 1: the CSV's 93 raw
    columns (one-hot states and percentages up to 100, **not normalised**: its
    ``load_data`` only slices the columns, the BatchNorm after the first layer does the
    normalising), ``Linearmodel`` (Linear → BatchNorm1d → ReLU → Linear), Adam lr=0.001,
    ``MSELoss``, batch 512, the first 200 shuffled rows held out for validation, its
    ``train``/``val`` functions (``opt.zero_grad(); outputs = model(x); loss.backward();
    opt.step()``; validation in ``model.eval()`` under ``torch.no_grad()``). 250 epochs
    instead of 400; a synthetic table of the same shape. Measured: MSE 119 (first
    step) -> validation MSE 1.4 (target variance about 20)."""
    torch.manual_seed(0)
    data, label = _covid_like_table()
    order = np.random.default_rng(0).permutation(len(data))
    data, label = data[order], label[order]
    val_data, val_label, train_data, train_label = data[:200], label[:200], data[200:], \
        label[200:]
    train_loader = DataLoader(TensorDataset(torch.from_numpy(train_data),
                                            torch.from_numpy(train_label)),
                              batch_size=512, shuffle=True, generator=_gen())
    val_loader = DataLoader(TensorDataset(torch.from_numpy(val_data),
                                          torch.from_numpy(val_label)),
                            batch_size=512, shuffle=False)
    net = _Linearmodel(in_dim=93)
    opt_adam = torch.optim.Adam(net.parameters(), lr=0.001)
    criterion = nn.MSELoss(reduction="mean")
    session = vd.watch(net, loader=train_loader)

    def train(train_dataset, model) -> None:
        model.train()
        for data_x, data_y in train_dataset:
            opt_adam.zero_grad()
            outputs = model(data_x)
            mse_loss = criterion(outputs, data_y)
            mse_loss.backward()
            opt_adam.step()
            session.log(loss=mse_loss)

    def val(val_dataset, model) -> float:
        model.eval()
        loss = 0.0
        with torch.no_grad():
            for data_x, data_y in val_dataset:
                outputs = model(data_x)
                loss += criterion(outputs, data_y).item() * len(data_x)
        return loss / len(val_dataset.dataset)

    for _ in range(250):
        train(train_loader, net)
        session.log(val_loss=val(val_loader, net))
    return finish(session)


CONTROLS: list[Control] = [
    Control("mnist-adadelta-steplr", mnist_adadelta_steplr,
            "pytorch/examples MNIST: log_softmax + nll_loss, dropout, Adadelta lr=1, StepLR "
            "0.7; source: pytorch/examples mnist/main.py@f15fac72"),
    Control("cifar-tutorial-sgd", cifar_tutorial_sgd,
            "CIFAR 'training a classifier' tutorial loop, batch 4, SGD momentum, running_loss; "
            "source: pytorch/tutorials beginner_source/blitz/cifar10_tutorial.py@c53e7d4e"),
    Control("d2l-softmax-regression-scratch", d2l_softmax_regression_scratch,
            "d2l softmax regression from scratch, hand-written sgd (param -= lr*grad/bs); "
            "source: d2l-ai/d2l-en chapter_linear-networks/softmax-regression-scratch.md"
            "@7be72347"),
    Control("d2l-mlp-scratch", d2l_mlp_scratch,
            "d2l 1.0 MLPScratch, hand-written SGD, backward+step under no_grad; source: "
            "d2l-ai/d2l-en chapter_multilayer-perceptrons/mlp-implementation.md@1ae7fb10"),
    Control("amp-recipe-fp16-gradscaler", amp_recipe_fp16_gradscaler,
            "fp16 autocast on the CPU + GradScaler('cpu'), Linear/ReLU stack, MSE; source: "
            "pytorch/tutorials recipes_source/recipes/amp_recipe.py@db77dcf6"),
    Control("bf16-autocast-cpu", bf16_autocast_cpu_training,
            "bf16 torch.autocast('cpu') training example, SGD; source: pytorch/pytorch "
            "torch/amp/autocast_mode.py@291bc5ca (docstring)"),
    Control("gradient-accumulation-plain", gradient_accumulation_plain_loop,
            "loss / accum_steps, step+scheduler+zero_grad every 4 batches; source: "
            "huggingface/accelerate docs/source/usage_guides/gradient_accumulation.md"
            "@9b9e5ff8"),
    Control("checkpoint-sequential-reentrant", checkpoint_sequential_reentrant,
            "checkpoint_sequential(use_reentrant=True) over a conv/BN Sequential; source: "
            "prigoyal/pytorch_memonger tutorial/Checkpointing_for_PyTorch_models.ipynb"
            "@1cb77c88"),
    Control("checkpoint-blocks-nonreentrant", checkpoint_blocks_nonreentrant,
            "per-block checkpoint(use_reentrant=False) in training; source: "
            "dongzhuoyao/tao-research-skills gpu-training-acceleration/references/"
            "gradient-checkpointing.md@bf43fa42"),
    Control("unet-segmentation-shapes", unet_segmentation_shapes,
            "tiny U-Net, per-pixel CrossEntropy on (N,H,W) masks, RMSprop, clip_grad_value_, "
            "ReduceLROnPlateau; source: milesial/Pytorch-UNet train.py@07debeb9"),
    Control("weighted-random-sampler", weighted_random_sampler_rebalance,
            "9:1 table rebalanced by WeightedRandomSampler(1/class_count); source: "
            "discuss.pytorch.org/t/11264 (ptrblck), copy in fclairec/geometric-ifc "
            "test.py@8492e567"),
    Control("class-weighted-ce-table", class_weighted_ce_table,
            "imbalanced 4-class table, CrossEntropyLoss(weight=1/count) + sampler, BN MLP, "
            "check_predictions at the end; source: towardsdatascience.com "
            "pytorch-tabular-multiclass-classification-9f8211a123ab"),
    Control("simclr-nt-xent-digits", simclr_nt_xent_digits,
            "SimCLR info_nce_loss (NT-Xent, T=0.07) on two augmented views of digits, Adam; "
            "source: sthalles/SimCLR simclr.py@727cbae1"),
    Control("denoising-autoencoder", denoising_autoencoder,
            "conv denoising autoencoder, noisy input vs clean target, sigmoid, MSE; source: "
            "udacity/deep-learning-v2-pytorch autoencoder/denoising-autoencoder/"
            "Denoising_Autoencoder_Solution.ipynb@7e8cc710"),
    Control("transfer-learning-bn-batch4", transfer_learning_bn_batch4,
            "BatchNorm ResNet at batch size 4, SGD, StepLR, train/val phases, best weights; "
            "source: pytorch/tutorials beginner_source/transfer_learning_tutorial.py@74ba612b"),
    Control("nhwc-permute-in-forward", nhwc_loader_permute_in_forward,
            "NHWC numpy batches permuted by the model's first module, check_batch; source: "
            "lucaslingle/pytorch_drl drl/agents/preprocessing/vision.py@97fc1620"),
    Control("low-contrast-sky-crops", low_contrast_sky_crops_cnn,
            "low-contrast sky-like crops, Normalize(0.5, 0.5), batch 4, show_batch/check_batch;"
            " source: pytorch/tutorials beginner_source/introyt/trainingyt.py@db77dcf6"),
    Control("skorch-classifier-loop", skorch_classifier_loop,
            "skorch NeuralNetClassifier's loop: softmax module, log + NLLLoss, ValidSplit; "
            "source: skorch-dev/skorch skorch/net.py@b5e28003"),
    Control("lightning-autoencoder-plain", lightning_autoencoder_plain_loop,
            "Lightning README LitAutoEncoder in a plain loop, batch size 1, Adam; source: "
            "Lightning-AI/pytorch-lightning README.md@c0c2000e"),
    Control("lhy-hw1-linear-batchnorm-raw", lhy_hw1_linear_batchnorm_raw,
            "Linear -> BatchNorm1d on raw unnormalised table columns, MSE regression; source: "
            "fyk-gif/LHY_HW1 model.py@1542813e"),
]
