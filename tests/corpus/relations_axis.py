"""Faults that are relations: normalisation over the wrong axis (a softmax/log_softmax over
the batch into a classification or custom loss). Each from a public report, with its fixed
twin; ``fixed=False`` runs the code as reported, ``True`` the fix."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

import vizdebug as vd

from . import Fault
from ._data import digits_std, loader
from ._loop import acc, evaluate, finish


# Source: https://github.com/MicrosoftDocs/pytorchfundamentals/issues/4
#   "Why is the dim=0 in LogSoftmax? not dim=1?": the course's multi-layer dense network
#   for digits ends in nn.LogSoftmax(dim=0) and trains with nn.NLLLoss, so each column is
#   normalised over the 128 images of the batch instead of each image over its 10 classes.
#   Fix (PR #21 of the same repository): LogSoftmax(dim=-1). The course's own train_epoch
#   loop (loss summed per epoch, torch.max(out, 1) for the accuracy) is kept.
def dense_log_softmax_over_batch(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = digits_std()
    net = nn.Sequential(nn.Flatten(), nn.Linear(64, 100), nn.ReLU(), nn.Linear(100, 10),
                        nn.LogSoftmax(dim=-1 if fixed else 0))
    train_loader = loader(xtr, ytr, 128, shuffle=False)
    optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
    loss_fn = nn.NLLLoss()
    session = vd.watch(net, loader=train_loader)
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    for _ in range(6):
        net.train()
        total_loss, correct, count = 0.0, 0, 0
        for features, labels in train_loader:
            optimizer.zero_grad()
            out = net(features)
            loss = loss_fn(out, labels)
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
            total_loss += float(loss)
            _, predicted = torch.max(out, 1)
            correct += int((predicted == labels).sum())
            count += len(labels)
        v_loss, v_acc = evaluate(net, *val, loss_fn, acc)
        session.log(val_loss=v_loss, val_acc=v_acc)
    return finish(session)


def _point_clouds(n: int, points: int = 48, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Noisy point clouds of three shapes (sphere, cube surface, ring): (n, points, 3)."""
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 3, size=n)
    raw = rng.normal(size=(n, points, 3))
    sphere = raw / np.linalg.norm(raw, axis=2, keepdims=True)
    cube = np.clip(raw, -1, 1)
    face = rng.integers(0, 3, size=(n, points))
    np.put_along_axis(cube, face[..., None], np.sign(raw[..., :1] + 1e-9), axis=2)
    angle = rng.uniform(0, 2 * np.pi, size=(n, points))
    ring = np.stack([np.cos(angle), np.sin(angle), 0.1 * raw[..., 2]], axis=2)
    shapes = np.stack([sphere, cube, ring])[label, np.arange(n)]
    scale = rng.uniform(0.7, 1.3, size=(n, 1, 1))
    return (shapes * scale + 0.05 * raw).astype(np.float32), label.astype(np.int64)


class PointNetCls(nn.Module):
    """PointNet's classifier, shrunk: shared per-point 1x1 convolutions, a max over the
    points, a small head; returns (log-probabilities, trans, trans_feat) as the original."""

    def __init__(self, k: int, dim: int) -> None:
        super().__init__()
        self.conv1, self.conv2 = nn.Conv1d(3, 32, 1), nn.Conv1d(32, 64, 1)
        self.bn1, self.bn2 = nn.BatchNorm1d(32), nn.BatchNorm1d(64)
        self.fc1, self.fc2 = nn.Linear(64, 32), nn.Linear(32, k)
        self.dim = dim

    def forward(self, x: torch.Tensor):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.bn2(self.conv2(x))
        x = torch.max(x, 2, keepdim=True)[0].view(-1, 64)
        x = self.fc2(F.relu(self.fc1(x)))
        return F.log_softmax(x, dim=self.dim), None, None


# Source: https://github.com/fxia22/pointnet.pytorch/issues/27
#   "Confusion about the usage of log_softmax function": PointNetCls.forward returned
#   F.log_softmax(x, dim=0), "Dim0 means the dimension of batch. However, the log_softmax
#   should be applied along the channels", and train_classification.py feeds it to
#   F.nll_loss. The maintainer fixed it in master (dim=1).
def pointnet_log_softmax_over_batch(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    x, y = _point_clouds(640)
    classifier = PointNetCls(3, 1 if fixed else 0)
    data = DataLoader(TensorDataset(torch.as_tensor(x[:512]), torch.as_tensor(y[:512])),
                      batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(0))
    optimizer = torch.optim.Adam(classifier.parameters(), lr=0.001, betas=(0.9, 0.999))
    session = vd.watch(classifier, loader=data)
    test_points, test_target = torch.as_tensor(x[512:]).transpose(2, 1), torch.as_tensor(y[512:])
    for _ in range(5):
        for points, target in data:
            points = points.transpose(2, 1)
            optimizer.zero_grad()
            classifier.train()
            pred, trans, trans_feat = classifier(points)
            loss = F.nll_loss(pred, target)
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
            pred_choice = pred.data.max(1)[1]
            pred_choice.eq(target.data).cpu().sum()
        classifier.eval()
        with torch.no_grad():
            pred, _, _ = classifier(test_points)
            session.log(val_loss=float(F.nll_loss(pred, test_target)),
                        val_acc=float((pred.max(1)[1] == test_target).float().mean()))
    return finish(session)


def gmm_loss(batch, mus, sigmas, logpi):
    """world-models' gmm_loss: minus the log-likelihood of ``batch`` under the mixture."""
    batch = batch.unsqueeze(-2)
    normal_dist = torch.distributions.Normal(mus, sigmas)
    g_log_probs = normal_dist.log_prob(batch)
    g_log_probs = logpi + torch.sum(g_log_probs, dim=-1)
    max_log_probs = torch.max(g_log_probs, dim=-1, keepdim=True)[0]
    g_probs = torch.exp(g_log_probs - max_log_probs)
    log_prob = max_log_probs.squeeze(-1) + torch.log(torch.sum(g_probs, dim=-1))
    return -torch.mean(log_prob)


class MDRNN(nn.Module):
    """world-models' multi-step MDRNN: an LSTM over (SEQ_LEN, BSIZE, ·) inputs and a linear
    head giving a Gaussian mixture over the next latent, a reward and a terminal logit."""

    def __init__(self, latents: int, actions: int, hiddens: int, gaussians: int,
                 pi_dim: int) -> None:
        super().__init__()
        self.latents, self.gaussians, self.pi_dim = latents, gaussians, pi_dim
        self.rnn = nn.LSTM(latents + actions, hiddens)
        self.gmm_linear = nn.Linear(hiddens, (2 * latents + 1) * gaussians + 2)

    def forward(self, actions: torch.Tensor, latents: torch.Tensor):
        seq_len, bs = actions.size(0), actions.size(1)
        outs, _ = self.rnn(torch.cat([actions, latents], dim=-1))
        gmm_outs = self.gmm_linear(outs)
        stride = self.gaussians * self.latents
        mus = gmm_outs[:, :, :stride].view(seq_len, bs, self.gaussians, self.latents)
        sigmas = torch.exp(gmm_outs[:, :, stride:2 * stride]).view(
            seq_len, bs, self.gaussians, self.latents)
        pi = gmm_outs[:, :, 2 * stride:2 * stride + self.gaussians].view(seq_len, bs,
                                                                         self.gaussians)
        logpi = F.log_softmax(pi, dim=self.pi_dim)
        return mus, sigmas, logpi, gmm_outs[:, :, -2], gmm_outs[:, :, -1]


def _rollouts(n: int, steps: int, latents: int = 4, seed: int = 0):
    """Latent rollouts with a two-branch (bimodal) transition: (obs, action, reward,
    terminal, next_obs), each (n, steps, ·) batch-first as the rollout files store them."""
    rng = np.random.default_rng(seed)
    z = np.zeros((n, steps + 1, latents), np.float32)
    z[:, 0] = rng.normal(size=(n, latents))
    action = rng.uniform(-1, 1, size=(n, steps, 2)).astype(np.float32)
    for t in range(steps):
        branch = rng.choice([-1.0, 1.0], size=(n, 1))
        z[:, t + 1] = 0.8 * z[:, t] + 0.5 * branch + 0.3 * action[:, t, :1] \
            + 0.1 * rng.normal(size=(n, latents))
    reward = z[:, 1:, 0].copy()
    terminal = (np.abs(z[:, 1:, 1]) > 2).astype(np.float32)
    return z[:, :-1], action, reward, terminal, z[:, 1:]


# Source: https://github.com/ctallec/world-models/issues/10
#   "Wrong dimension for pi softmax": in MDRNN.forward, pi = pi.view(seq_len, bs,
#   self.gaussians); logpi = f.log_softmax(pi, dim=-2) - "the softmax is done over the batch
#   dimension of pi. Shouldn't [it] be done over the gaussians dimension (ie. dim=-1)?" The
#   author: "You are right! I'm fixing this". logpi feeds the program's own gmm_loss, with
#   trainmdrnn.py's loop (rollouts transposed to (SEQ_LEN, BSIZE, ·), gmm + bce + mse).
def mdrnn_mixture_over_batch(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    arrays = [torch.as_tensor(a) for a in _rollouts(96, 12)]
    data = DataLoader(TensorDataset(*arrays), batch_size=8, shuffle=True,
                      generator=torch.Generator().manual_seed(0))
    mdrnn = MDRNN(4, 2, 32, 5, -1 if fixed else -2)
    optimizer = torch.optim.RMSprop(mdrnn.parameters(), lr=1e-3, alpha=0.9)
    session = vd.watch(mdrnn, loader=data)
    for _ in range(4):
        for batch in data:
            latent_obs, action, reward, terminal, latent_next_obs = [
                arr.transpose(1, 0) for arr in batch]
            mus, sigmas, logpi, rs, ds = mdrnn(action, latent_obs)
            gmm = gmm_loss(latent_next_obs, mus, sigmas, logpi)
            bce = F.binary_cross_entropy_with_logits(ds, terminal)
            mse = F.mse_loss(rs, reward)
            loss = (gmm + bce + mse) / (4 + 2)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
    return finish(session)


class CartPole:
    """The classic cart-pole (Barto, Sutton & Anderson), as gym's CartPole-v0 steps it."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.state = np.zeros(4)

    def reset(self) -> np.ndarray:
        self.state = self.rng.uniform(-0.05, 0.05, size=4)
        return self.state.astype(np.float32)

    def step(self, action: int) -> tuple[np.ndarray, bool]:
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        cos, sin = np.cos(theta), np.sin(theta)
        temp = (force + 0.05 * theta_dot ** 2 * sin) / 1.1
        theta_acc = (9.8 * sin - cos * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos ** 2 / 1.1))
        x_acc = temp - 0.05 * theta_acc * cos / 1.1
        self.state = np.array([x + 0.02 * x_dot, x_dot + 0.02 * x_acc,
                               theta + 0.02 * theta_dot, theta_dot + 0.02 * theta_acc])
        done = abs(self.state[0]) > 2.4 or abs(self.state[2]) > 0.2095
        return self.state.astype(np.float32), bool(done)


def _discount_rewards(rewards: torch.Tensor, gamma: float = 0.99) -> torch.Tensor:
    disc_return = torch.pow(gamma, torch.arange(len(rewards)).float()) * rewards
    return disc_return / disc_return.max()


# Source: https://github.com/DeepReinforcementLearning/DeepReinforcementLearningInAction/issues/32
#   "Chap.4. softmax(dim=1)": the book's REINFORCE policy network ends in
#   torch.nn.Softmax(dim=0), "only OK when the input is a 1 dimensional array. However,
#   when you give a batch input, then the probability will be computed along the row
#   direction of the batch matrix" - pred_batch = model(state_batch) is normalised over the
#   episode's states, then gathered and logged into the loss. Fix from the issue:
#   Softmax(dim=1), with unsqueeze(0)/squeeze(0) around the one-state call.
def reinforce_policy_softmax_over_batch(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Linear(4, 150), nn.LeakyReLU(), nn.Linear(150, 2),
                          nn.Softmax(dim=1 if fixed else 0))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.009)
    env, session = CartPole(0), vd.watch(model)
    for _ in range(60):
        curr_state, transitions = env.reset(), []
        for t in range(200):
            state = torch.from_numpy(curr_state).float()
            act_prob = model(state.unsqueeze(0)).squeeze(0) if fixed else model(state)
            p = act_prob.data.numpy().astype(np.float64)  # (float32 sums miss numpy's 1e-8)
            action = rng.choice(np.array([0, 1]), p=p / p.sum())
            prev_state = curr_state
            curr_state, done = env.step(int(action))
            transitions.append((prev_state, action, t + 1))
            if done:
                break
        reward_batch = torch.Tensor([r for (s, a, r) in transitions]).flip(dims=(0,))
        disc_returns = _discount_rewards(reward_batch)
        state_batch = torch.Tensor(np.array([s for (s, a, r) in transitions]))
        action_batch = torch.Tensor(np.array([a for (s, a, r) in transitions]))
        pred_batch = model(state_batch)
        prob_batch = pred_batch.gather(dim=1, index=action_batch.long().view(-1, 1)).squeeze()
        loss = -torch.sum(disc_returns * torch.log(prob_batch))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        session.log(loss=loss, episode_length=float(len(transitions)))
    return finish(session)


FAULTS: list[Fault] = [
    Fault("relations/dense-log-softmax-over-batch", dense_log_softmax_over_batch,
          "loss-output-mismatch", "loss (nll_loss)",
          "https://github.com/MicrosoftDocs/pytorchfundamentals/issues/4"),
    Fault("relations/pointnet-log-softmax-over-batch", pointnet_log_softmax_over_batch,
          "loss-output-mismatch", "loss (nll_loss)",
          "https://github.com/fxia22/pointnet.pytorch/issues/27"),
    Fault("relations/mdrnn-mixture-over-batch", mdrnn_mixture_over_batch,
          "loss-output-mismatch", "loss (log_softmax)",
          "https://github.com/ctallec/world-models/issues/10"),
    Fault("relations/reinforce-softmax-over-batch", reinforce_policy_softmax_over_batch,
          "loss-output-mismatch", "loss (softmax)",
          "https://github.com/DeepReinforcementLearning/DeepReinforcementLearningInAction/"
          "issues/32"),
]
