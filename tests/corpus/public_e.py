"""Working public programs ported small (part e), the second held-out round: none of them
was seen while vizdebug's rules were calibrated. Each is cited with its repository, path and
commit (or URL), keeps its own architecture, loss, optimizer, schedule and loop idioms, and
was checked to train without vizdebug (``python -m tests.corpus.public_e``: the same
programs with ``vd.watch`` replaced by a recorder that only keeps the logged values);
vizdebug must give none of them a warning or an error."""

from __future__ import annotations

import math
import random
import sys
from collections import deque, namedtuple

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

import vizdebug as vd

from . import Control
from ._data import digits
from ._loop import LAST_METRICS, finish

PLAIN = False  # True: run without vizdebug (the recorder below), to check the training
SERIES: dict[str, list[float]] = {}  # the last plain run's logged values


class _Recorder:
    """What a run without vizdebug keeps: every logged value, nothing else."""

    def __init__(self) -> None:
        self.values: dict[str, list[float]] = {}

    def log(self, **metrics) -> None:
        for k, v in metrics.items():
            self.values.setdefault(k, []).append(float(v.detach() if torch.is_tensor(v) else v))

    def tap_loader(self, loader):
        return loader


def _watch(model, **kw):
    return _Recorder() if PLAIN else vd.watch(model, **kw)


def _finish(session) -> vd.Findings:
    if isinstance(session, _Recorder):
        SERIES.clear()
        SERIES.update(session.values)
        LAST_METRICS.clear()
        for k, v in session.values.items():
            LAST_METRICS[k + "_first"], LAST_METRICS[k] = v[0], v[-1]
        return vd.Findings([])
    return finish(session)


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _digits01(size: int | None = None):
    """Digits in [0, 1] as ``ToTensor()`` gives MNIST, resized to ``size`` if given."""
    xtr, xte, ytr, yte = digits()
    xtr, xte = torch.as_tensor(xtr / 16.0), torch.as_tensor(xte / 16.0)
    if size is not None:
        xtr = F.interpolate(xtr, size=(size, size), mode="bilinear")
        xte = F.interpolate(xte, size=(size, size), mode="bilinear")
    return xtr, xte, torch.as_tensor(ytr), torch.as_tensor(yte)


# --------------------------------------------------------------------------------------
# A tiny hand-written CartPole (the classic-control equations gym's CartPole-v1 uses)
# --------------------------------------------------------------------------------------


class _CartPole:
    """Cart-pole balancing as in Barto, Sutton & Anderson (1983) and gym's
    ``CartPole-v1``: force +-10 N, tau 0.02 s, Euler steps, done past 12 degrees or 2.4 m,
    reward 1 per step; episodes capped at ``max_steps``."""

    def __init__(self, seed: int = 0, max_steps: int = 200) -> None:
        self.rng = np.random.default_rng(seed)
        self.max_steps = max_steps

    def reset(self):
        self.state = self.rng.uniform(-0.05, 0.05, size=4)
        self.t = 0
        return self.state.astype(np.float32)

    def step(self, action: int):
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        cos, sin = math.cos(theta), math.sin(theta)
        total_mass, pole_mass_length, length = 1.1, 0.05, 0.5
        temp = (force + pole_mass_length * theta_dot ** 2 * sin) / total_mass
        theta_acc = (9.8 * sin - cos * temp) / (
            length * (4.0 / 3.0 - 0.1 * cos ** 2 / total_mass))
        x_acc = temp - pole_mass_length * theta_acc * cos / total_mass
        x, x_dot = x + 0.02 * x_dot, x_dot + 0.02 * x_acc
        theta, theta_dot = theta + 0.02 * theta_dot, theta_dot + 0.02 * theta_acc
        self.state = np.array([x, x_dot, theta, theta_dot])
        self.t += 1
        failed = abs(x) > 2.4 or abs(theta) > 12 * 2 * math.pi / 360
        return self.state.astype(np.float32), 1.0, failed, self.t >= self.max_steps


# --------------------------------------------------------------------------------------
# pytorch/examples reinforcement_learning/reinforce.py
# --------------------------------------------------------------------------------------


class _ReinforcePolicy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.affine1 = nn.Linear(4, 128)
        self.dropout = nn.Dropout(p=0.6)
        self.affine2 = nn.Linear(128, 2)
        self.saved_log_probs: list[torch.Tensor] = []
        self.rewards: list[float] = []

    def forward(self, x):
        x = F.relu(self.dropout(self.affine1(x)))
        return F.softmax(self.affine2(x), dim=1)


def examples_reinforce() -> vd.Findings:
    """pytorch/examples ``reinforcement_learning/reinforce.py`` (2f5815e1): a policy
    4-128-2 with dropout 0.6 and a softmax, one action sampled per step from
    ``Categorical(probs)`` (``policy.saved_log_probs``), one update per episode: discounted
    returns (gamma 0.99) normalised by their mean and std, ``policy_loss = cat(-log_prob *
    R).sum()``, Adam lr 1e-2, ``running_reward = 0.05 * ep_reward + 0.95 *
    running_reward``, stop once it passes the threshold. On the hand-written CartPole
    above (episodes of at most 200 steps, threshold 150: gym's 475 of 500 scaled). The
    practitioner logs the episode's loss and reward. Measured: running reward 10 -> 150
    after 183 episodes (episode reward 15 at the first, 200 at the last ones; 40% of the
    logged losses are negative)."""
    torch.manual_seed(543)
    env = _CartPole(seed=543)
    policy = _ReinforcePolicy()
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
    eps = np.finfo(np.float32).eps.item()
    session = _watch(policy)
    running_reward = 10.0
    for _episode in range(600):
        state, ep_reward = env.reset(), 0.0
        while True:
            probs = policy(torch.from_numpy(state).float().unsqueeze(0))
            m = torch.distributions.Categorical(probs)
            action = m.sample()
            policy.saved_log_probs.append(m.log_prob(action))
            state, reward, failed, truncated = env.step(action.item())
            policy.rewards.append(reward)
            ep_reward += reward
            if failed or truncated:
                break
        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        R, returns = 0.0, deque()
        for r in policy.rewards[::-1]:
            R = r + 0.99 * R
            returns.appendleft(R)
        returns_t = torch.tensor(returns)
        returns_t = (returns_t - returns_t.mean()) / (returns_t.std() + eps)
        policy_loss = [-log_prob * R for log_prob, R in zip(policy.saved_log_probs, returns_t)]
        optimizer.zero_grad()
        loss = torch.cat(policy_loss).sum()
        loss.backward()
        optimizer.step()
        del policy.rewards[:]
        del policy.saved_log_probs[:]
        session.log(loss=loss, reward=ep_reward)
        if running_reward > 150:
            break
    return _finish(session)


# --------------------------------------------------------------------------------------
# pytorch/examples reinforcement_learning/actor_critic.py
# --------------------------------------------------------------------------------------

_SavedAction = namedtuple("_SavedAction", ["log_prob", "value"])


class _ActorCritic(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.affine1 = nn.Linear(4, 128)
        self.action_head = nn.Linear(128, 2)
        self.value_head = nn.Linear(128, 1)
        self.saved_actions: list[_SavedAction] = []
        self.rewards: list[float] = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        return F.softmax(self.action_head(x), dim=-1), self.value_head(x)


def examples_actor_critic() -> vd.Findings:
    """pytorch/examples ``reinforcement_learning/actor_critic.py`` (2f5815e1): one
    network with a shared layer, an action head (softmax) and a value head; per episode
    the actor's loss ``-log_prob * (R - value.item())`` and the critic's
    ``F.smooth_l1_loss(value, tensor([R]))``, summed (``torch.stack(...).sum()``), Adam lr
    3e-2, returns normalised, gamma 0.99, stop on the running reward. Same CartPole as
    above. Measured: running reward 10 -> 150 after 126 episodes (episode reward 31 ->
    200); the loss, a sum over the episode's steps, grows with them (12.7 -> 34.5)."""
    torch.manual_seed(543)
    env = _CartPole(seed=1)
    model = _ActorCritic()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-2)
    eps = np.finfo(np.float32).eps.item()
    session = _watch(model)
    running_reward = 10.0
    for _episode in range(600):
        state, ep_reward = env.reset(), 0.0
        while True:
            probs, state_value = model(torch.from_numpy(state).float())
            m = torch.distributions.Categorical(probs)
            action = m.sample()
            model.saved_actions.append(_SavedAction(m.log_prob(action), state_value))
            state, reward, failed, truncated = env.step(action.item())
            model.rewards.append(reward)
            ep_reward += reward
            if failed or truncated:
                break
        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        R, returns = 0.0, []
        for r in model.rewards[::-1]:
            R = r + 0.99 * R
            returns.insert(0, R)
        returns_t = torch.tensor(returns)
        returns_t = (returns_t - returns_t.mean()) / (returns_t.std() + eps)
        policy_losses, value_losses = [], []
        for (log_prob, value), R in zip(model.saved_actions, returns_t):
            advantage = R - value.item()
            policy_losses.append(-log_prob * advantage)
            value_losses.append(F.smooth_l1_loss(value, torch.tensor([R])))
        optimizer.zero_grad()
        loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum()
        loss.backward()
        optimizer.step()
        del model.rewards[:]
        del model.saved_actions[:]
        session.log(loss=loss, reward=ep_reward)
        if running_reward > 150:
            break
    return _finish(session)


# --------------------------------------------------------------------------------------
# d2l.ai's Trainer (d2l-ai/d2l-en d2l/torch.py, 1.0): what the chapters below train with
# --------------------------------------------------------------------------------------


def _d2l_fit(model, train_dataloader, val_dataloader, max_epochs, optim,
             gradient_clip_val: float = 0.0, metric: bool = True) -> vd.Findings:
    """``d2l.Trainer.fit``/``fit_epoch``: ``model.train()``, ``training_step``,
    ``zero_grad``, backward (and clipping and step) inside ``torch.no_grad()``; then
    ``model.eval()`` and ``validation_step`` under ``no_grad``, the means logged."""
    session = _watch(model, loader=train_dataloader)
    for _epoch in range(max_epochs):
        model.train()
        for batch in train_dataloader:
            loss = model.training_step(batch)
            optim.zero_grad()
            with torch.no_grad():
                loss.backward()
                if gradient_clip_val > 0:
                    _d2l_clip_gradients(gradient_clip_val, model)
                optim.step()
            session.log(loss=loss)
        model.eval()
        losses, accs = [], []
        for batch in val_dataloader:
            with torch.no_grad():
                y_hat = model(*batch[:-1])
                losses.append(float(model.loss(y_hat, batch[-1])))
                if metric:
                    accs.append(float(model.accuracy(y_hat, batch[-1])))
        if metric:
            session.log(val_loss=float(np.mean(losses)), val_acc=float(np.mean(accs)))
        else:
            session.log(val_loss=float(np.mean(losses)))
    return _finish(session)


def _d2l_clip_gradients(grad_clip_val, model) -> None:
    """``d2l.Trainer.clip_gradients``: the global norm, gradients scaled in place."""
    params = [p for p in model.parameters() if p.requires_grad]
    norm = torch.sqrt(sum(torch.sum(p.grad ** 2) for p in params))
    if norm > grad_clip_val:
        for param in params:
            param.grad[:] *= grad_clip_val / norm


class _D2lClassifier(nn.Module):
    """``d2l.Classifier``: ``training_step``, ``loss`` (cross-entropy on reshaped scores),
    ``accuracy``, and SGD at ``self.lr`` from ``configure_optimizers``."""

    lr = 0.1

    def training_step(self, batch):
        return self.loss(self(*batch[:-1]), batch[-1])

    def loss(self, Y_hat, Y, averaged=True):
        Y_hat = Y_hat.reshape((-1, Y_hat.shape[-1]))
        return F.cross_entropy(Y_hat, Y.reshape((-1,)), reduction="mean" if averaged else "none")

    def accuracy(self, Y_hat, Y):
        Y_hat = Y_hat.reshape((-1, Y_hat.shape[-1]))
        return float((Y_hat.argmax(axis=1).type(Y.dtype) == Y.reshape(-1)).float().mean())

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


def _d2l_loaders(xtr, xte, ytr, yte, batch_size):
    train = DataLoader(TensorDataset(xtr, ytr), batch_size=batch_size, shuffle=True,
                       generator=_gen(0))
    return train, DataLoader(TensorDataset(xte, yte), batch_size=batch_size)


# --------------------------------------------------------------------------------------
# d2l-ai/d2l-en chapter_convolutional-modern/batch-norm.md (from scratch)
# --------------------------------------------------------------------------------------


def _batch_norm(X, gamma, beta, moving_mean, moving_var, eps, momentum):
    # d2l: training or prediction told apart by whether autograd records
    if not torch.is_grad_enabled():
        X_hat = (X - moving_mean) / torch.sqrt(moving_var + eps)
    else:
        if len(X.shape) == 2:
            mean = X.mean(dim=0)
            var = ((X - mean) ** 2).mean(dim=0)
        else:
            mean = X.mean(dim=(0, 2, 3), keepdim=True)
            var = ((X - mean) ** 2).mean(dim=(0, 2, 3), keepdim=True)
        X_hat = (X - mean) / torch.sqrt(var + eps)
        moving_mean = (1.0 - momentum) * moving_mean + momentum * mean
        moving_var = (1.0 - momentum) * moving_var + momentum * var
    Y = gamma * X_hat + beta
    return Y, moving_mean.data, moving_var.data


class _BatchNormScratch(nn.Module):
    def __init__(self, num_features, num_dims):
        super().__init__()
        shape = (1, num_features) if num_dims == 2 else (1, num_features, 1, 1)
        self.gamma = nn.Parameter(torch.ones(shape))
        self.beta = nn.Parameter(torch.zeros(shape))
        self.moving_mean = torch.zeros(shape)  # plain attributes, not buffers, as d2l
        self.moving_var = torch.ones(shape)

    def forward(self, X):
        Y, self.moving_mean, self.moving_var = _batch_norm(
            X, self.gamma, self.beta, self.moving_mean, self.moving_var, eps=1e-5, momentum=0.1)
        return Y


class _BNLeNetScratch(_D2lClassifier):
    def __init__(self, lr=0.1, num_classes=10):
        super().__init__()
        self.lr = lr
        self.net = nn.Sequential(
            nn.LazyConv2d(6, kernel_size=5), _BatchNormScratch(6, num_dims=4), nn.Sigmoid(),
            nn.AvgPool2d(kernel_size=2, stride=2),
            nn.LazyConv2d(16, kernel_size=5), _BatchNormScratch(16, num_dims=4), nn.Sigmoid(),
            nn.AvgPool2d(kernel_size=2, stride=2), nn.Flatten(),
            nn.LazyLinear(120), _BatchNormScratch(120, num_dims=2), nn.Sigmoid(),
            nn.LazyLinear(84), _BatchNormScratch(84, num_dims=2), nn.Sigmoid(),
            nn.LazyLinear(num_classes))

    def forward(self, X):
        return self.net(X)


def d2l_batch_norm_scratch() -> vd.Findings:
    """d2l.ai "Batch Normalization" from scratch (d2l-ai/d2l-en
    ``chapter_convolutional-modern/batch-norm.md`` @65e8a238): ``batch_norm`` written by
    hand, train or predict told apart by ``torch.is_grad_enabled()``, the moving mean and
    variance kept as plain tensor attributes (not buffers) updated with momentum 0.1;
    ``BNLeNetScratch`` (lazy conv 5x5 -> BN -> Sigmoid -> AvgPool, twice, then 120 and 84
    with BN and Sigmoid), SGD lr 0.1, d2l's Trainer, batch 128. Digits in [0, 1] resized
    to 16x16 (its Fashion-MNIST is 28x28), 20 epochs of 11 batches (its 10 of 469).
    Measured: validation accuracy 0.13 after the first epoch -> 0.77 at the fourth ->
    0.95 (0.86-0.95 over the last ten: the moving statistics follow fast-moving
    weights; nn.BatchNorm in their place gives the same curve)."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = _digits01(16)
    train, val = _d2l_loaders(xtr, xte, ytr, yte, 128)
    model = _BNLeNetScratch(lr=0.1)
    with torch.no_grad():  # d2l's apply_init: a first batch materialises the lazy layers
        model(next(iter(train))[0])
    return _d2l_fit(model, train, val, 20, model.configure_optimizers())


# --------------------------------------------------------------------------------------
# d2l-ai/d2l-en chapter_multilayer-perceptrons/dropout.md (from scratch)
# --------------------------------------------------------------------------------------


def _dropout_layer(X, dropout):
    if dropout == 1:
        return torch.zeros_like(X)
    mask = (torch.rand(X.shape) > dropout).float()
    return mask * X / (1.0 - dropout)


class _DropoutMLPScratch(_D2lClassifier):
    def __init__(self, num_outputs, num_hiddens_1, num_hiddens_2, dropout_1, dropout_2, lr):
        super().__init__()
        self.lr, self.dropout_1, self.dropout_2 = lr, dropout_1, dropout_2
        self.lin1 = nn.LazyLinear(num_hiddens_1)
        self.lin2 = nn.LazyLinear(num_hiddens_2)
        self.lin3 = nn.LazyLinear(num_outputs)
        self.relu = nn.ReLU()

    def forward(self, X):
        H1 = self.relu(self.lin1(X.reshape((X.shape[0], -1))))
        if self.training:
            H1 = _dropout_layer(H1, self.dropout_1)
        H2 = self.relu(self.lin2(H1))
        if self.training:
            H2 = _dropout_layer(H2, self.dropout_2)
        return self.lin3(H2)


def d2l_dropout_scratch() -> vd.Findings:
    """d2l.ai "Dropout" from scratch (d2l-ai/d2l-en ``chapter_multilayer-perceptrons/
    dropout.md`` @1ae7fb10 era, d2l 1.0): ``dropout_layer`` written by hand (a
    ``torch.rand`` mask, kept units scaled by 1/(1-p)) applied when ``self.training``,
    ``DropoutMLPScratch`` 256-256 with dropout 0.5 and 0.5, lr 0.1, d2l's Trainer, 10
    epochs; digits in [0, 1] (its Fashion-MNIST), batch 64 (its 256). Measured:
    validation accuracy 0.33 after the first epoch -> 0.81 at the ninth, 0.77 at the
    tenth (validation loss 2.21 -> 0.60)."""
    torch.manual_seed(0)
    xtr, xte, ytr, yte = _digits01()
    train, val = _d2l_loaders(xtr, xte, ytr, yte, 64)
    model = _DropoutMLPScratch(10, 256, 256, 0.5, 0.5, lr=0.1)
    with torch.no_grad():
        model(next(iter(train))[0])
    return _d2l_fit(model, train, val, 10, model.configure_optimizers())


# --------------------------------------------------------------------------------------
# d2l-ai/d2l-en chapter_multilayer-perceptrons/weight-decay.md (from scratch)
# --------------------------------------------------------------------------------------


class _LinearRegressionScratch(nn.Module):
    """d2l's ``LinearRegressionScratch``: ``w`` and ``b`` are plain tensors with
    ``requires_grad=True``, not ``nn.Parameter``s; its optimizer is d2l's own ``SGD``."""

    def __init__(self, num_inputs, lr, sigma=0.01):
        super().__init__()
        self.lr = lr
        self.w = torch.normal(0, sigma, (num_inputs, 1), requires_grad=True)
        self.b = torch.zeros(1, requires_grad=True)

    def forward(self, X):
        return torch.matmul(X, self.w) + self.b

    def loss(self, y_hat, y):
        return ((y_hat - y) ** 2 / 2).mean()


class _WeightDecayScratch(_LinearRegressionScratch):
    def __init__(self, num_inputs, lambd, lr, sigma=0.01):
        super().__init__(num_inputs, lr, sigma)
        self.lambd = lambd

    def training_step(self, batch):
        return self.loss(self(*batch[:-1]), batch[-1]) + self.lambd * (self.w ** 2).sum() / 2


class _D2lSGD:
    """d2l's ``SGD(HyperParameters)``: ``param -= lr * param.grad``, ``zero_grad``."""

    def __init__(self, params, lr):
        self.params, self.lr = params, lr

    def step(self):
        for param in self.params:
            param -= self.lr * param.grad

    def zero_grad(self):
        for param in self.params:
            if param.grad is not None:
                param.grad.zero_()


def d2l_weight_decay_scratch() -> vd.Findings:
    """d2l.ai "Weight Decay" from scratch (d2l-ai/d2l-en ``chapter_multilayer-perceptrons/
    weight-decay.md``, d2l 1.0): the high-dimensional linear regression (20 training and
    100 validation examples, 200 inputs, ``y = 0.05 + sum(0.01 x) + noise 0.01``), batch
    5, ``WeightDecayScratch`` adding ``lambd * l2_penalty(w)`` to the squared loss, lambd
    3, d2l's own SGD lr 0.01 on the plain tensors ``[w, b]``, 10 epochs (the chapter's
    "using weight decay" run). Measured: training loss (with the penalty) 0.067 -> 0.005,
    validation loss 0.017 -> 0.0093, falling every epoch."""
    torch.manual_seed(0)
    n, num_inputs = 120, 200
    X = torch.randn(n, num_inputs)
    y = torch.matmul(X, torch.ones((num_inputs, 1)) * 0.01) + 0.05 + torch.randn(n, 1) * 0.01
    train = DataLoader(TensorDataset(X[:20], y[:20]), batch_size=5, shuffle=True, generator=_gen(0))
    val = DataLoader(TensorDataset(X[20:], y[20:]), batch_size=5)
    model = _WeightDecayScratch(num_inputs, lambd=3, lr=0.01)
    return _d2l_fit(model, train, val, 10, _D2lSGD([model.w, model.b], model.lr), metric=False)


# --------------------------------------------------------------------------------------
# d2l-ai/d2l-en chapter_recurrent-neural-networks/rnn-scratch.md
# --------------------------------------------------------------------------------------

_WORDS = ["the", "time", "traveller", "said", "that", "we", "could", "see", "the", "machine", "in", "the", "laboratory", "and", "it", "was", "a", "thing", "of", "brass", "and", "ivory", "with", "a", "glimmering", "crystal", "rod", "he", "put", "his", "hand", "upon", "the", "lever", "and", "the", "little", "machine", "swung", "round", "and", "vanished"]


def _time_machine_like(n_chars: int = 12000, seed: int = 0) -> str:
    """A text in the Time Machine's words (no download): sentences of 5-12 words drawn
    with a bigram preference for the word that follows in the passage above."""
    rng = random.Random(seed)
    out: list[str] = []
    i = 0
    while sum(len(w) + 1 for w in out) < n_chars:
        i = i + 1 if rng.random() < 0.7 and i + 1 < len(_WORDS) else rng.randrange(len(_WORDS))
        out.append(_WORDS[i])
    return " ".join(out)


class _RNNScratch(nn.Module):
    def __init__(self, num_inputs, num_hiddens, sigma=0.01):
        super().__init__()
        self.num_hiddens, self.sigma = num_hiddens, sigma
        self.W_xh = nn.Parameter(torch.randn(num_inputs, num_hiddens) * sigma)
        self.W_hh = nn.Parameter(torch.randn(num_hiddens, num_hiddens) * sigma)
        self.b_h = nn.Parameter(torch.zeros(num_hiddens))

    def forward(self, inputs, state=None):
        if state is None:
            state = torch.zeros((inputs.shape[1], self.num_hiddens))
        outputs = []
        for X in inputs:  # inputs: (num_steps, batch_size, num_inputs)
            state = torch.tanh(torch.matmul(X, self.W_xh) + torch.matmul(state, self.W_hh)
                               + self.b_h)
            outputs.append(state)
        return outputs, state


class _RNNLMScratch(_D2lClassifier):
    def __init__(self, rnn, vocab_size, lr=0.01):
        super().__init__()
        self.rnn, self.vocab_size, self.lr = rnn, vocab_size, lr
        self.W_hq = nn.Parameter(torch.randn(rnn.num_hiddens, vocab_size) * rnn.sigma)
        self.b_q = nn.Parameter(torch.zeros(vocab_size))

    def one_hot(self, X):
        return F.one_hot(X.T, self.vocab_size).type(torch.float32)

    def output_layer(self, rnn_outputs):
        return torch.stack([torch.matmul(H, self.W_hq) + self.b_q for H in rnn_outputs], 1)

    def forward(self, X, state=None):
        rnn_outputs, _ = self.rnn(self.one_hot(X), state)
        return self.output_layer(rnn_outputs)


def d2l_rnn_scratch() -> vd.Findings:
    """d2l.ai "Recurrent Neural Network Implementation from Scratch" (d2l-ai/d2l-en
    ``chapter_recurrent-neural-networks/rnn-scratch.md``, d2l 1.0): ``RNNScratch`` with
    its own ``W_xh``, ``W_hh``, ``b_h`` (sigma 0.01) looping over time steps,
    ``RNNLMScratch`` one-hot inputs (``F.one_hot(X.T)``), the output layer stacked over
    steps, cross-entropy on the reshaped scores; ``TimeMachine``-style data (every window
    of ``num_steps + 1`` characters, shuffled), d2l's Trainer with
    ``gradient_clip_val=1``, SGD lr 1, 32 hidden units. A generated text in the book's
    words (no download), num_steps 16, batch 256 (its 32, 1024), 12 epochs (its 100).
    Measured: validation loss 2.79 -> 0.98 (perplexity 16.3 -> 2.7), character accuracy
    0.20 -> 0.71."""
    torch.manual_seed(0)
    text = _time_machine_like()
    vocab = sorted(set(text))
    corpus = torch.tensor([vocab.index(c) for c in text])
    num_steps = 16
    array = torch.stack([corpus[i:i + num_steps + 1] for i in range(len(corpus) - num_steps)])
    X, Y = array[:, :-1], array[:, 1:]
    train = DataLoader(TensorDataset(X[:6000], Y[:6000]), batch_size=256, shuffle=True,
                       generator=_gen(0))
    val = DataLoader(TensorDataset(X[6000:9000], Y[6000:9000]), batch_size=256)
    model = _RNNLMScratch(_RNNScratch(len(vocab), 32), vocab_size=len(vocab), lr=1)
    return _d2l_fit(model, train, val, 12, model.configure_optimizers(), gradient_clip_val=1)


# --------------------------------------------------------------------------------------
# pytorch/examples mnist_forward_forward/main.py
# --------------------------------------------------------------------------------------


def examples_forward_forward() -> vd.Findings:
    """pytorch/examples ``mnist_forward_forward/main.py`` (16d4ca4c): Hinton's
    forward-forward algorithm. The label is written over the first 10 pixels
    (``overlay_y_on_x``), negatives get a wrong label (``get_y_neg``); ``Net`` keeps its
    layers in a plain Python list (not a ``ModuleList``) and overrides ``train(x_pos,
    x_neg)``; each ``Layer(nn.Linear)`` normalises its input, has its own Adam (lr 0.03)
    and trains alone on the whole set for ``num_epochs`` full-batch steps of ``log1p(exp(
    [-g_pos + threshold, g_neg - threshold])).mean()`` (goodness = mean squared
    activation, threshold 2), then hands the detached outputs to the next layer;
    ``predict`` picks the label with the most goodness. Digits normalised as its MNIST
    (``Normalize``, flattened), dims [64, 200, 200] (its [784, 500, 500]), 300 steps a
    layer (its 1000). The practitioner watches the ``Net`` and logs each step's loss
    where the source prints it. Measured: the loss 1.12 at the first layer's first step,
    0.34 at the second layer's last; train error 0.11, test error 0.09."""
    torch.manual_seed(1)
    xtr, xte, ytr, yte = digits()
    mean, std = xtr.mean(), xtr.std()
    x, x_te = (torch.as_tensor((a - mean) / std).flatten(1) for a in (xtr, xte))
    y, y_te = torch.as_tensor(ytr), torch.as_tensor(yte)
    session = None

    def overlay_y_on_x(x, y, classes=10):
        x_ = x.clone()
        x_[:, :classes] *= 0.0
        x_[range(x.shape[0]), y] = x.max()
        return x_

    def get_y_neg(y):
        y_neg = y.clone()
        for idx, y_samp in enumerate(y):
            allowed = list(range(10))
            allowed.remove(y_samp.item())
            y_neg[idx] = torch.tensor(allowed)[torch.randint(len(allowed), size=(1,))].item()
        return y_neg

    class Layer(nn.Linear):
        def __init__(self, in_features, out_features):
            super().__init__(in_features, out_features)
            self.relu = nn.ReLU()
            self.opt = torch.optim.Adam(self.parameters(), lr=0.03)
            self.threshold, self.num_epochs = 2.0, 300

        def forward(self, x):
            x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
            return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

        def train(self, x_pos, x_neg):
            for _i in range(self.num_epochs):
                g_pos = self.forward(x_pos).pow(2).mean(1)
                g_neg = self.forward(x_neg).pow(2).mean(1)
                loss = torch.log1p(torch.exp(torch.cat([-g_pos + self.threshold,
                                                        g_neg - self.threshold]))).mean()
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                session.log(loss=loss)
            return self.forward(x_pos).detach(), self.forward(x_neg).detach()

    class Net(nn.Module):
        def __init__(self, dims):
            super().__init__()
            self.layers = []
            for d in range(len(dims) - 1):
                self.layers = self.layers + [Layer(dims[d], dims[d + 1])]

        def predict(self, x):
            goodness_per_label = []
            for label in range(10):
                h = overlay_y_on_x(x, label)
                goodness = []
                for layer in self.layers:
                    h = layer(h)
                    goodness = goodness + [h.pow(2).mean(1)]
                goodness_per_label += [sum(goodness).unsqueeze(1)]
            return torch.cat(goodness_per_label, 1).argmax(1)

        def train(self, x_pos, x_neg):
            h_pos, h_neg = x_pos, x_neg
            for layer in self.layers:
                h_pos, h_neg = layer.train(h_pos, h_neg)

    net = Net([64, 200, 200])
    session = _watch(net)
    x_pos = overlay_y_on_x(x, y)
    x_neg = overlay_y_on_x(x, get_y_neg(y))
    net.train(x_pos, x_neg)
    session.log(train_error=1.0 - net.predict(x).eq(y).float().mean().item(),
                test_error=1.0 - net.predict(x_te).eq(y_te).float().mean().item())
    return _finish(session)


# --------------------------------------------------------------------------------------
# pytorch/tutorials beginner_source/fgsm_tutorial.py
# --------------------------------------------------------------------------------------


class _MnistNet(nn.Module):
    """The tutorial's ``Net`` (pytorch/examples' MNIST net), sized for 8x8 digits."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(256, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = self.dropout1(F.max_pool2d(x, 2))
        x = self.dropout2(F.relu(self.fc1(torch.flatten(x, 1))))
        return F.log_softmax(self.fc2(x), dim=1)


def tutorials_fgsm() -> vd.Findings:
    """pytorch/tutorials ``beginner_source/fgsm_tutorial.py`` (FGSM on a trained
    classifier): the tutorial's ``Net`` (conv 32, conv 64, dropout 0.25/0.5, log_softmax)
    trained first with pytorch/examples' MNIST recipe (its ``lenet_mnist_model.pth`` came
    from there: Adadelta lr 1, StepLR 0.7, ``nll_loss``; 5 epochs, batch 64), inputs
    ``Normalize((0.1307,), (0.3081,))``; then the attack in the same session:
    ``model.eval()``, one test image at a time with ``data.requires_grad = True``,
    ``model.zero_grad()``, ``loss.backward()`` to get ``data.grad``, ``fgsm_attack`` on
    the de-normalised image (``sign`` of the gradient, clamp to [0, 1]), re-normalised,
    accuracy per epsilon (0, 0.1, 0.2 on 150 test digits). Measured: validation accuracy
    0.35 -> 0.98 in 5 epochs; under attack 0.97 at epsilon 0, 0.81 at 0.1, 0.28 at 0.2."""
    torch.manual_seed(1)
    xtr, xte, ytr, yte = _digits01()
    norm = lambda t: (t - 0.1307) / 0.3081  # noqa: E731 - transforms.Normalize
    train_loader = DataLoader(TensorDataset(norm(xtr), ytr), batch_size=64, shuffle=True,
                              generator=_gen(1))
    test_loader = DataLoader(TensorDataset(norm(xte[:150]), yte[:150]), batch_size=1)
    model = _MnistNet()
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    session = _watch(model, loader=train_loader)
    for _epoch in range(5):
        model.train()
        for data, target in train_loader:
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
        model.eval()
        with torch.no_grad():
            out = model(norm(xte))
            session.log(val_loss=float(F.nll_loss(out, yte)),
                        val_acc=float((out.argmax(1) == yte).float().mean()))
        scheduler.step()

    def fgsm_attack(image, epsilon, data_grad):
        return torch.clamp(image + epsilon * data_grad.sign(), 0, 1)

    def denorm(batch):
        return batch * 0.3081 + 0.1307

    model.eval()
    for epsilon in (0.0, 0.1, 0.2):
        correct = 0
        for data, target in test_loader:
            data.requires_grad = True
            output = model(data)
            if output.max(1, keepdim=True)[1].item() != target.item():
                continue
            loss = F.nll_loss(output, target)
            model.zero_grad()
            loss.backward()
            perturbed = norm(fgsm_attack(denorm(data), epsilon, data.grad.data))
            correct += int(model(perturbed).max(1, keepdim=True)[1].item() == target.item())
        session.log(**{f"adv_acc_eps{epsilon}": correct / len(test_loader)})
    return _finish(session)


# --------------------------------------------------------------------------------------
# pytorch/tutorials intermediate_source/pruning_tutorial.py
# --------------------------------------------------------------------------------------


class _LeNet(nn.Module):
    """The pruning tutorial's ``LeNet`` (1 -> 6 -> 16 channels, 3x3 convs, 120, 84)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3)
        self.conv2 = nn.Conv2d(6, 16, 3)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, int(x.nelement() / x.shape[0]))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def tutorials_pruning_finetune() -> vd.Findings:
    """pytorch/tutorials ``intermediate_source/pruning_tutorial.py`` (92f11a17): its
    ``LeNet`` on 28x28 inputs (digits resized to MNIST's size), pruned with the tutorial's global
    pruning (``prune.global_unstructured`` over the five weights, ``L1Unstructured``,
    amount 0.2: ``weight`` becomes ``weight_orig * weight_mask`` through a forward
    pre-hook) and made permanent with ``prune.remove``. The tutorial prunes a model it
    does not train; here the model is trained first (CrossEntropyLoss, SGD lr 0.01
    momentum 0.9 as the 60-minute blitz trains the same LeNet, 4 epochs, batch 32), pruned
    and fine-tuned 2 epochs with the same optimizer (its parameters are the
    ``weight_orig`` tensors now), then ``remove``d, as iterative pruning is done.
    Measured: validation accuracy 0.17 -> 0.75 over the 4 training epochs, 0.85 and 0.92
    after the two fine-tuning epochs with the masks on; global sparsity 20.0%."""
    import torch.nn.utils.prune as prune

    torch.manual_seed(0)
    xtr, xte, ytr, yte = _digits01(28)
    train = DataLoader(TensorDataset(xtr, ytr), batch_size=32, shuffle=True, generator=_gen(0))
    model = _LeNet()
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    session = _watch(model, loader=train)

    def epoch():
        model.train()
        for inputs, labels in train:
            optimizer.zero_grad()
            loss = criterion(model(inputs), labels)
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
        model.eval()
        with torch.no_grad():
            out = model(xte)
            session.log(val_loss=float(criterion(out, yte)),
                        val_acc=float((out.argmax(1) == yte).float().mean()))

    for _ in range(4):
        epoch()
    parameters_to_prune = ((model.conv1, "weight"), (model.conv2, "weight"),
                           (model.fc1, "weight"), (model.fc2, "weight"), (model.fc3, "weight"))
    prune.global_unstructured(parameters_to_prune, pruning_method=prune.L1Unstructured,
                              amount=0.2)
    for _ in range(2):
        epoch()
    for module, name in parameters_to_prune:
        prune.remove(module, name)
    zeros = sum(float(torch.sum(m.weight == 0)) for m, _ in parameters_to_prune)
    session.log(sparsity=zeros / sum(m.weight.nelement() for m, _ in parameters_to_prune))
    return _finish(session)


# --------------------------------------------------------------------------------------
# pytorch/tutorials advanced_source/static_quantization_tutorial.py (QAT part)
# --------------------------------------------------------------------------------------


class _ConvBNReLU(nn.Sequential):
    def __init__(self, in_planes, out_planes, kernel_size=3, stride=1):
        super().__init__(nn.Conv2d(in_planes, out_planes, kernel_size, stride,
                                   (kernel_size - 1) // 2, bias=False),
                         nn.BatchNorm2d(out_planes, momentum=0.1), nn.ReLU(inplace=False))


class _QuantNet(nn.Module):
    """A small MobileNet-like stack with the tutorial's ``QuantStub``/``DeQuantStub``
    and ``fuse_model`` over each ``ConvBNReLU``."""

    def __init__(self):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.features = nn.Sequential(_ConvBNReLU(1, 16), _ConvBNReLU(16, 32, stride=2),
                                      _ConvBNReLU(32, 32))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(32, 10))
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x):
        x = self.features(self.quant(x))
        x = self.classifier(self.pool(x).flatten(1))
        return self.dequant(x)

    def fuse_model(self, is_qat=False):
        fuse = (torch.ao.quantization.fuse_modules_qat if is_qat
                else torch.ao.quantization.fuse_modules)
        for m in self.modules():
            if type(m) is _ConvBNReLU:
                fuse(m, ["0", "1", "2"], inplace=True)


def tutorials_qat() -> vd.Findings:
    """pytorch/tutorials ``advanced_source/static_quantization_tutorial.py``
    (https://pytorch.org/tutorials/advanced/static_quantization_tutorial.html), its
    quantization-aware training: a float model trained first (the tutorial loads
    pretrained MobileNetV2 weights; here 6 epochs of SGD lr 0.05 momentum 0.9, not
    watched), then ``fuse_model(is_qat=True)``, ``qconfig =
    get_default_qat_qconfig('x86')`` (its 'fbgemm'), ``prepare_qat``, SGD lr 1e-4, 8
    epochs of ``train_one_epoch`` capped at ``num_train_batches`` (20), the observers
    disabled after epoch 3 and the BN statistics frozen after epoch 2
    (``freeze_bn_stats``), and each epoch a copy ``convert``ed from ``qat_model.eval()``
    and evaluated. The practitioner watches the prepared model. Measured: float accuracy
    0.982; the int8 model 0.982-0.984 each epoch; per-batch loss 0.051 -> 0.046 (the
    median of its first and last steps)."""
    import copy

    import torch.ao.quantization as tq
    from torch.ao.nn.intrinsic import qat as nniqat

    torch.manual_seed(0)
    xtr, xte, ytr, yte = _digits01()
    xtr, xte = (xtr - 0.3) / 0.4, (xte - 0.3) / 0.4
    data_loader = DataLoader(TensorDataset(xtr, ytr), batch_size=30, shuffle=True,
                             generator=_gen(0))
    criterion = nn.CrossEntropyLoss()
    float_model = _QuantNet()
    opt = torch.optim.SGD(float_model.parameters(), lr=0.05, momentum=0.9)
    for _ in range(6):
        for image, target in data_loader:
            opt.zero_grad()
            criterion(float_model(image), target).backward()
            opt.step()

    def evaluate(model):
        model.eval()
        with torch.no_grad():
            return float((model(xte).argmax(1) == yte).float().mean())

    qat_model = copy.deepcopy(float_model)
    qat_model.train()
    qat_model.fuse_model(is_qat=True)
    optimizer = torch.optim.SGD(qat_model.parameters(), lr=0.0001)
    qat_model.qconfig = tq.get_default_qat_qconfig("x86")
    tq.prepare_qat(qat_model, inplace=True)
    session = _watch(qat_model, loader=data_loader)
    session.log(float_acc=evaluate(float_model))

    def train_one_epoch(model, criterion, optimizer, data_loader, ntrain_batches):
        model.train()
        cnt = 0
        for image, target in data_loader:
            cnt += 1  # noqa: SIM113 - the tutorial's counter
            output = model(image)
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
            if cnt >= ntrain_batches:
                return

    for nepoch in range(8):
        train_one_epoch(qat_model, criterion, optimizer, data_loader, 20)
        if nepoch > 3:
            qat_model.apply(tq.disable_observer)
        if nepoch > 2:
            qat_model.apply(nniqat.freeze_bn_stats)
        quantized_model = tq.convert(qat_model.eval(), inplace=False)
        session.log(val_acc=evaluate(quantized_model))
    return _finish(session)


# --------------------------------------------------------------------------------------
# Lightning: manual optimization GAN; LightningDataModule + accumulate_grad_batches
# --------------------------------------------------------------------------------------


def _quiet_lightning():
    import logging
    import warnings

    for name in ("lightning.pytorch", "lightning.fabric", "lightning"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", module="lightning")


def _lightning_findings(cb, recorder) -> vd.Findings:
    if PLAIN:
        return _finish(recorder)
    return _finish(cb.session)


def lightning_manual_gan() -> vd.Findings:
    """Lightning's "Manual Optimization" docs, "Use Multiple Optimizers (like GANs)"
    (Lightning-AI/pytorch-lightning ``docs/source-pytorch/model/manual_optimization.rst``
    @02644b9c): ``self.automatic_optimization = False``, ``g_opt, d_opt =
    self.optimizers()``, the discriminator on real and on ``g_X.detach()``, then the
    generator through the same ``g_X``, ``zero_grad``/``self.manual_backward``/``step`` for
    each, ``self.log_dict({"g_loss": ..., "d_loss": ...})``, two Adams; ``training_step``
    returns nothing. The docs leave out the networks and the criterion and say the code
    follows the DCGAN tutorial, so: MLP generator (Tanh) and discriminator (Sigmoid),
    ``BCELoss``, Adam lr 2e-4 betas (0.5, 0.999) (the docs' 1e-5 moves a small GAN too
    slowly for 20 epochs). Digits in [-1, 1], batch 64. Watched with vizdebug's Lightning
    callback. Measured: d_loss 1.38 -> 1.18-1.32, g_loss 0.67 -> 0.50-0.72 (neither side
    wins), the generated mean image's correlation with the real one 0.23 -> 0.93."""
    import lightning as L

    from vizdebug.integrations.lightning import VizdebugCallback

    _quiet_lightning()
    torch.manual_seed(0)
    xtr, _, ytr, _ = _digits01()
    X = xtr.flatten(1) * 2 - 1
    recorder = _Recorder()

    class SimpleGAN(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.G = nn.Sequential(nn.Linear(16, 128), nn.ReLU(), nn.Linear(128, 64), nn.Tanh())
            self.D = nn.Sequential(nn.Linear(64, 128), nn.LeakyReLU(0.2), nn.Linear(128, 1),
                                   nn.Sigmoid())
            self.criterion = nn.BCELoss()
            self.automatic_optimization = False

        def sample_z(self, n):
            return torch.randn(n, 16, device=self.device)

        def sample_G(self, n):
            return self.G(self.sample_z(n))

        def training_step(self, batch, batch_idx):
            g_opt, d_opt = self.optimizers()
            X, _ = batch
            batch_size = X.shape[0]
            real_label = torch.ones((batch_size, 1), device=self.device)
            fake_label = torch.zeros((batch_size, 1), device=self.device)
            g_X = self.sample_G(batch_size)
            errD = (self.criterion(self.D(X), real_label)
                    + self.criterion(self.D(g_X.detach()), fake_label))
            d_opt.zero_grad()
            self.manual_backward(errD)
            d_opt.step()
            errG = self.criterion(self.D(g_X), real_label)
            g_opt.zero_grad()
            self.manual_backward(errG)
            g_opt.step()
            self.log_dict({"g_loss": errG, "d_loss": errD}, prog_bar=True)
            if PLAIN:
                recorder.log(g_loss=errG, d_loss=errD)

        def on_train_epoch_end(self):
            with torch.no_grad():
                fake = self.sample_G(500).mean(0)
            corr = float(torch.corrcoef(torch.stack([fake, X.mean(0)]))[0, 1])
            if PLAIN:
                recorder.log(mean_image_corr=corr)

        def configure_optimizers(self):
            g_opt = torch.optim.Adam(self.G.parameters(), lr=2e-4, betas=(0.5, 0.999))
            d_opt = torch.optim.Adam(self.D.parameters(), lr=2e-4, betas=(0.5, 0.999))
            return g_opt, d_opt

    cb = VizdebugCallback()
    loader = DataLoader(TensorDataset(X, ytr), batch_size=64, shuffle=True, generator=_gen(0))
    module = SimpleGAN()
    import tempfile

    with tempfile.TemporaryDirectory() as root:
        trainer = L.Trainer(accelerator="cpu", devices=1, max_epochs=20, logger=False,
                            enable_checkpointing=False, enable_progress_bar=False,
                            enable_model_summary=False, default_root_dir=root,
                            callbacks=[] if PLAIN else [cb])
        trainer.fit(module, loader)
    return _lightning_findings(cb, recorder)


def lightning_datamodule_accumulate() -> vd.Findings:
    """Lightning's ``LightningDataModule`` (docs ``data/datamodule.rst``,
    https://lightning.ai/docs/pytorch/stable/data/datamodule.html: ``prepare_data``,
    ``setup(stage)`` splitting with ``random_split``, ``train_dataloader``/
    ``val_dataloader``/``test_dataloader``) with a classifier module (``F.cross_entropy``,
    ``self.log("val_loss")``, ``self.log("val_acc")``) trained by
    ``Trainer(accumulate_grad_batches=4, gradient_clip_val=0.5)`` (docs
    ``common/trainer.rst``, https://lightning.ai/docs/pytorch/stable/common/trainer.html
    #accumulate-grad-batches), Adam lr 1e-3, batch 16 (an effective 64), 15 epochs,
    ``trainer.test`` at the end; the module calls its submodule (``self.model(x)``).
    Watched with vizdebug's Lightning callback. Measured: val_acc 0.76 after the first
    epoch -> 0.97, test accuracy 0.98."""
    import lightning as L
    from torch.utils.data import random_split

    from vizdebug.integrations.lightning import VizdebugCallback

    _quiet_lightning()
    torch.manual_seed(0)
    recorder = _Recorder()

    class DigitsDataModule(L.LightningDataModule):
        def __init__(self, batch_size: int = 16):
            super().__init__()
            self.batch_size = batch_size

        def prepare_data(self):
            digits()  # the docs download here; sklearn's copy is local

        def setup(self, stage: str):
            xtr, xte, ytr, yte = digits()
            mean, std = xtr.mean(), xtr.std()
            full = TensorDataset(torch.as_tensor((xtr - mean) / std), torch.as_tensor(ytr))
            self.test_set = TensorDataset(torch.as_tensor((xte - mean) / std), torch.as_tensor(yte))
            self.train_set, self.val_set = random_split(full, [1100, len(full) - 1100],
                                                        generator=_gen(42))

        def train_dataloader(self):
            return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True,
                              generator=_gen(0))

        def val_dataloader(self):
            return DataLoader(self.val_set, batch_size=self.batch_size)

        def test_dataloader(self):
            return DataLoader(self.test_set, batch_size=self.batch_size)

    class LitClassifier(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(),
                                       nn.Linear(128, 10))

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = F.cross_entropy(self.model(x), y)
            self.log("train_loss", loss)
            if PLAIN:
                recorder.log(loss=loss)
            return loss

        def validation_step(self, batch, batch_idx):
            x, y = batch
            logits = self.model(x)
            self.log("val_loss", F.cross_entropy(logits, y))
            self.log("val_acc", (logits.argmax(1) == y).float().mean())

        def on_validation_epoch_end(self):
            if PLAIN and not self.trainer.sanity_checking:
                recorder.log(val_acc=self.trainer.callback_metrics["val_acc"])

        def test_step(self, batch, batch_idx):
            x, y = batch
            self.log("test_acc", (self.model(x).argmax(1) == y).float().mean())

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=1e-3)

    import tempfile

    cb = VizdebugCallback()
    dm, module = DigitsDataModule(), LitClassifier()
    with tempfile.TemporaryDirectory() as root:
        trainer = L.Trainer(accelerator="cpu", devices=1, max_epochs=15, logger=False,
                            enable_checkpointing=False, enable_progress_bar=False,
                            enable_model_summary=False, default_root_dir=root,
                            accumulate_grad_batches=4, gradient_clip_val=0.5,
                            callbacks=[] if PLAIN else [cb])
        trainer.fit(module, datamodule=dm)
        result = trainer.test(module, datamodule=dm, verbose=False)
    if PLAIN:
        recorder.log(test_acc=result[0]["test_acc"])
    return _lightning_findings(cb, recorder)


# --------------------------------------------------------------------------------------
# Hugging Face: the Trainer on a config-built causal LM; run_glue.py's plain loop
# --------------------------------------------------------------------------------------


def _word_blocks(block_size: int = 16, seed: int = 0):
    """``group_texts`` of the causal-LM guide on the made-up Time Machine text: word ids
    concatenated and cut in blocks, ``labels`` a copy of ``input_ids``."""
    words = _time_machine_like(30000, seed).split()
    vocab = sorted(set(words))
    ids = torch.tensor([vocab.index(w) for w in words])
    n = len(ids) // block_size
    blocks = ids[:n * block_size].view(n, block_size)
    return [{"input_ids": b, "labels": b.clone()} for b in blocks], len(vocab)


def hf_trainer_causal_lm() -> vd.Findings:
    """Hugging Face docs, "Causal language modeling" (huggingface/transformers
    ``docs/source/en/tasks/language_modeling.md``,
    https://huggingface.co/docs/transformers/tasks/language_modeling): ``group_texts``
    blocks, ``Trainer`` with ``TrainingArguments(eval_strategy="epoch", learning_rate=...,
    weight_decay=0.01)``, ``trainer.train()`` then ``math.exp(eval_results["eval_loss"])``.
    A 2-layer ``GPT2LMHeadModel`` built from a ``GPT2Config`` in place of distilgpt2, on
    the made-up Time Machine text above (word tokens), so lr 1e-3 for a model trained from
    scratch (its 2e-5 fine-tunes), 3 epochs, batch 16. Watched with vizdebug's Trainer
    callback as the README shows. Measured: training loss 3.00 -> 2.22, eval perplexity
    12.1 after the first epoch -> 8.8 (the vocabulary has 33 words)."""
    import tempfile
    import warnings

    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
    from transformers.trainer_callback import PrinterCallback
    from transformers.utils import logging as hf_logging

    from vizdebug.integrations.transformers import VizdebugCallback

    hf_logging.set_verbosity_error()
    warnings.filterwarnings("ignore", module="transformers")
    torch.manual_seed(0)
    blocks, vocab = _word_blocks()
    cut = int(len(blocks) * 0.9)
    config = GPT2Config(vocab_size=vocab, n_positions=32, n_embd=64, n_layer=2, n_head=2)
    model = GPT2LMHeadModel(config)
    cb = VizdebugCallback()
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=out, eval_strategy="epoch", learning_rate=1e-3,
                                 weight_decay=0.01, num_train_epochs=3,
                                 per_device_train_batch_size=16, per_device_eval_batch_size=16,
                                 report_to="none", use_cpu=True, save_strategy="no",
                                 disable_tqdm=True, logging_steps=10, seed=0)
        trainer = Trainer(model=model, args=args, train_dataset=blocks[:cut],
                          eval_dataset=blocks[cut:], callbacks=[] if PLAIN else [cb])
        trainer.remove_callback(PrinterCallback)  # disable_tqdm prints each log instead
        trainer.train()
        eval_results = trainer.evaluate()
    if PLAIN:
        rec = _Recorder()
        for entry in trainer.state.log_history:
            if "loss" in entry:
                rec.log(loss=entry["loss"])
            if "eval_loss" in entry:
                rec.log(perplexity=math.exp(entry["eval_loss"]))
        rec.log(perplexity=math.exp(eval_results["eval_loss"]))
        return _finish(rec)
    return _finish(cb.session)


def hf_run_glue_plain_loop() -> vd.Findings:
    """huggingface/transformers ``examples/run_glue.py`` (v2.3.0, the ``train()`` loop
    before the Trainer existed): ``no_decay = ["bias", "LayerNorm.weight"]`` parameter
    groups (weight decay 0.01 on the rest), ``AdamW(lr, eps=1e-8)``,
    ``get_linear_schedule_with_warmup`` (10% warm-up), ``model.zero_grad()`` once before
    the epochs, ``outputs = model(**inputs); loss = outputs[0]``, ``loss /
    gradient_accumulation_steps`` (2), ``tr_loss += loss.item()``, every 2 batches
    ``clip_grad_norm_(1.0)``, ``optimizer.step()``, ``scheduler.step()``,
    ``model.zero_grad()``, ``global_step += 1``; evaluation each epoch. A tiny
    ``DistilBertForSequenceClassification`` from a ``DistilBertConfig`` on the made-up
    MRPC-like pairs of ``public_d`` (no token types: DistilBERT has none), lr 5e-4 from
    scratch (its 5e-5 fine-tunes), batch 16, 4 epochs. The practitioner logs the loss of
    each optimizer step (``session.begin_step()`` per accumulation group, as the README
    shows). Measured: loss 0.69 -> 0.52, evaluation accuracy 0.54 after the first two
    epochs -> 0.80 -> 0.815 (chance 0.5)."""
    from transformers import (
        DistilBertConfig,
        DistilBertForSequenceClassification,
        get_linear_schedule_with_warmup,
    )
    from transformers.utils import logging as hf_logging

    from .public_d import _pair_collate, _sentence_pairs

    hf_logging.set_verbosity_error()
    torch.manual_seed(0)

    def collate(batch):
        out = _pair_collate(batch)
        del out["token_type_ids"]
        return out

    config = DistilBertConfig(vocab_size=60, dim=64, n_layers=2, n_heads=2, hidden_dim=128,
                              max_position_embeddings=32, num_labels=2)
    model = DistilBertForSequenceClassification(config)
    train_dataloader = DataLoader(_sentence_pairs(1200, 0), shuffle=True, batch_size=16,
                                  collate_fn=collate, generator=_gen(0))
    eval_dataloader = DataLoader(_sentence_pairs(200, 1), batch_size=16, collate_fn=collate)
    gradient_accumulation_steps, num_train_epochs = 2, 4
    t_total = len(train_dataloader) // gradient_accumulation_steps * num_train_epochs
    no_decay = ["bias", "LayerNorm.weight"]
    optimizer_grouped_parameters = [
        {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
         "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
         "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(optimizer_grouped_parameters, lr=5e-4, eps=1e-8)
    scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=t_total // 10,
                                                num_training_steps=t_total)
    session = _watch(model, loader=train_dataloader)
    global_step, tr_loss = 0, 0.0
    model.zero_grad()
    for _epoch in range(num_train_epochs):
        step_loss = 0.0
        for step, batch in enumerate(train_dataloader):
            if step % gradient_accumulation_steps == 0 and not PLAIN:
                session.begin_step()
            model.train()
            outputs = model(**batch)
            loss = outputs[0] / gradient_accumulation_steps
            loss.backward()
            tr_loss += loss.item()
            step_loss += loss.item()
            if (step + 1) % gradient_accumulation_steps == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                model.zero_grad()
                global_step += 1
                session.log(loss=step_loss)
                step_loss = 0.0
        model.eval()
        preds, labels = [], []
        for batch in eval_dataloader:
            with torch.no_grad():
                logits = model(**batch)[1]
            preds.append(logits.argmax(-1))
            labels.append(batch["labels"])
        session.log(val_acc=float((torch.cat(preds) == torch.cat(labels)).float().mean()))
    return _finish(session)


CONTROLS = [
    Control("examples-reinforce", examples_reinforce,
            "REINFORCE on a hand-written CartPole: Categorical policy with dropout, one update "
            "per episode, normalised returns, Adam 1e-2, loss and episode reward logged; "
            "source: pytorch/examples reinforcement_learning/reinforce.py@2f5815e1"),
    Control("examples-actor-critic", examples_actor_critic,
            "actor-critic on the same CartPole: shared layer, action and value heads, "
            "-log_prob * advantage + smooth_l1(value, R) summed, Adam 3e-2; source: "
            "pytorch/examples reinforcement_learning/actor_critic.py@2f5815e1"),
    Control("examples-forward-forward", examples_forward_forward,
            "forward-forward: layers in a plain list, Net.train(x_pos, x_neg) overridden, "
            "per-layer Adam and goodness loss, layer after layer, full batch; source: "
            "pytorch/examples mnist_forward_forward/main.py@16d4ca4c"),
    Control("d2l-batch-norm-scratch", d2l_batch_norm_scratch,
            "d2l batch norm from scratch (is_grad_enabled decides train/predict, moving "
            "stats as plain attributes) in a sigmoid LeNet, SGD 0.1, d2l Trainer; source: "
            "d2l-ai/d2l-en chapter_convolutional-modern/batch-norm.md@65e8a238"),
    Control("d2l-dropout-scratch", d2l_dropout_scratch,
            "d2l dropout from scratch (torch.rand mask when self.training), MLP 256-256, "
            "dropout 0.5/0.5, SGD 0.1; source: d2l-ai/d2l-en chapter_multilayer-perceptrons/"
            "dropout.md (d2l 1.0)"),
    Control("d2l-weight-decay-scratch", d2l_weight_decay_scratch,
            "d2l weight decay from scratch: 20 examples x 200 inputs, lambd * l2_penalty "
            "added to the loss, plain requires_grad tensors (no nn.Parameter), d2l's own SGD; "
            "source: d2l-ai/d2l-en chapter_multilayer-perceptrons/weight-decay.md (d2l 1.0)"),
    Control("d2l-rnn-scratch", d2l_rnn_scratch,
            "d2l RNN from scratch: own W_xh/W_hh/b_h looped over steps, one-hot inputs, "
            "Trainer's gradient_clip_val=1, SGD lr 1; source: d2l-ai/d2l-en "
            "chapter_recurrent-neural-networks/rnn-scratch.md (d2l 1.0)"),
    Control("tutorials-fgsm", tutorials_fgsm,
            "FGSM: MNIST net trained (Adadelta, StepLR), then the attack in the same session "
            "(eval, data.requires_grad, model.zero_grad, backward for data.grad); source: "
            "pytorch/tutorials beginner_source/fgsm_tutorial.py"),
    Control("tutorials-pruning-finetune", tutorials_pruning_finetune,
            "LeNet trained, global_unstructured L1 pruning (weight_orig * weight_mask via a "
            "pre-hook), fine-tuned, prune.remove; source: pytorch/tutorials "
            "intermediate_source/pruning_tutorial.py@92f11a17"),
    Control("tutorials-qat", tutorials_qat,
            "quantization-aware training: fuse_modules_qat, prepare_qat, SGD 1e-4, observers "
            "disabled and BN frozen mid-way, convert(eval()) each epoch; source: pytorch/"
            "tutorials advanced_source/static_quantization_tutorial.py"),
    Control("lightning-manual-gan", lightning_manual_gan,
            "Lightning manual optimization GAN: automatic_optimization=False, two "
            "optimizers, manual_backward, log_dict, training_step returns None; source: "
            "Lightning-AI/pytorch-lightning docs/source-pytorch/model/"
            "manual_optimization.rst@02644b9c"),
    Control("lightning-datamodule-accumulate", lightning_datamodule_accumulate,
            "LightningDataModule (prepare_data/setup/loaders), Trainer(accumulate_grad_"
            "batches=4, gradient_clip_val=0.5), module calls self.model(x); source: "
            "lightning.ai/docs/pytorch/stable/data/datamodule.html, common/trainer.html"),
    Control("hf-trainer-causal-lm", hf_trainer_causal_lm,
            "HF Trainer (eval_strategy='epoch', weight_decay 0.01) on a config-built "
            "GPT2LMHeadModel, group_texts blocks, labels = input_ids; source: huggingface/"
            "transformers docs/source/en/tasks/language_modeling.md"),
    Control("hf-run-glue-plain-loop", hf_run_glue_plain_loop,
            "run_glue.py's plain loop: no_decay groups, AdamW eps 1e-8, get_linear_schedule_"
            "with_warmup, loss / accumulation, clip 1.0, model.zero_grad; source: "
            "huggingface/transformers examples/run_glue.py@v2.3.0"),
]


if __name__ == "__main__":  # the programs without vizdebug: what they train to
    torch.set_num_threads(1)
    PLAIN = "--with-vizdebug" not in sys.argv
    wanted = [a for a in sys.argv[1:] if not a.startswith("--")]
    for control in CONTROLS:
        if wanted and not any(w in control.name for w in wanted):
            continue
        said = control.program()
        print(control.name, {k: round(v, 4) for k, v in LAST_METRICS.items()},
              [f"{f.severity} {f.code}" for f in said if f.severity in ("warning", "error")])
        for k, v in SERIES.items():
            if k != "loss" or len(v) < 30:
                print(f"    {k} ({len(v)}):", [round(x, 3) for x in v[:: max(1, len(v) // 20)]])
