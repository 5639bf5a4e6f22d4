"""Working training programs as public code writes them, small: vizdebug must give none of
them a warning or an error, and the faults next to them must stay named.

Each test is a cause measured on working public programs: a GAN's discriminator holding
the generator loss's gradients until ``netD.zero_grad()`` (pytorch/examples dcgan), two
optimizers over one wrapper module, the two sides of a game read as losses to minimise, a
per-sample loop's noisy loss (the char-RNN tutorial) and a batch of four (the CIFAR-10
tutorial), a ``GradScaler`` skipping overflowing fp16 steps (the AMP recipe), a gradient
norm that starts at its peak and falls, a frozen backbone kept in ``eval()`` (the
fine-tuning tutorial), LBFGS with a closure and SGD written by hand.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn
from torch.nn import functional as F

import vizdebug as vd


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny models: one thread is faster, and steady on shared cores (as the corpus runs)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _alarms(found: vd.Findings) -> list[tuple[str, str, str | None]]:
    return [(f.severity, f.code, f.where) for f in found if f.severity != "info"]


def _run(program, *args, **kwargs) -> vd.Findings:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return program(*args, **kwargs)


def _finish(session: vd.Session) -> vd.Findings:
    found = session.findings()
    session.close()
    return found


# -- 1-3. GANs -----------------------------------------------------------------------------
def _gan_nets() -> tuple[nn.Module, nn.Module]:
    torch.manual_seed(0)
    netG = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16), nn.Tanh())
    netD = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1), nn.Sigmoid())
    return netG, netD


def _gan_loader() -> torch.utils.data.DataLoader:
    data = torch.randn(1280, 16) * 0.5 + 1
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data), batch_size=32,
                                       shuffle=True, generator=torch.Generator().manual_seed(0))


def dcgan(zero_d: bool = True, epochs: int = 4) -> vd.Findings:
    """pytorch/examples dcgan/main.py's loop: D on a real batch and on ``fake.detach()``,
    ``optimizerD.step()``, then G through ``netD(fake)`` (whose backward fills D's
    gradients too, reset by the next ``netD.zero_grad()``). The discriminator is watched."""
    netG, netD = _gan_nets()
    loader = _gan_loader()
    criterion = nn.BCELoss()
    optimizerD = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    session = vd.watch(netD, loader=loader)
    for _ in range(epochs):
        for (real,) in loader:
            if zero_d:
                netD.zero_grad()
            b = real.size(0)
            errD_real = criterion(netD(real), torch.ones(b, 1))
            errD_real.backward()
            fake = netG(torch.randn(b, 8))
            errD_fake = criterion(netD(fake.detach()), torch.zeros(b, 1))
            errD_fake.backward()
            optimizerD.step()
            netG.zero_grad()
            errG = criterion(netD(fake), torch.ones(b, 1))
            errG.backward()
            optimizerG.step()
            session.log(loss_D=(errD_real + errD_fake).item(), loss_G=errG.item())
    return _finish(session)


def test_a_dcgan_loop_is_clean_and_a_forgotten_zero_grad_is_named():
    assert _alarms(_run(dcgan)) == []
    found = _run(dcgan, zero_d=False, epochs=2)
    assert [(f.severity, f.code) for f in found if f.code == "missing-zero-grad"] == [
        ("error", "missing-zero-grad")]


class _GAN(nn.Module):
    """A wrapper holding both networks (a Lightning-style GAN module), each trained by its
    own optimizer."""

    def __init__(self) -> None:
        super().__init__()
        self.G, self.D = _gan_nets()

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.D(self.G(z))


def gan_wrapper() -> vd.Findings:
    """The generator steps first, then the discriminator, on one watched wrapper module."""
    model = _GAN()
    loader = _gan_loader()
    criterion = nn.BCELoss()
    opt_g = torch.optim.Adam(model.G.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(model.D.parameters(), lr=2e-4, betas=(0.5, 0.999))
    session = vd.watch(model, loader=loader)
    for _ in range(6):
        for (real,) in loader:
            b = real.size(0)
            opt_g.zero_grad()
            g_loss = criterion(model(torch.randn(b, 8)), torch.ones(b, 1))
            g_loss.backward()
            opt_g.step()
            opt_d.zero_grad()
            fake = model.G(torch.randn(b, 8)).detach()
            d_loss = (criterion(model.D(real), torch.ones(b, 1))
                      + criterion(model.D(fake), torch.zeros(b, 1))) / 2
            d_loss.backward()
            opt_d.step()
            session.log(g_loss=g_loss.item(), d_loss=d_loss.item())
    return _finish(session)


def test_two_optimizers_over_one_wrapper_module_are_clean():
    assert _alarms(_run(gan_wrapper)) == []


def _critic() -> tuple[nn.Module, nn.Module]:
    netG, _ = _gan_nets()
    netD = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                         nn.Linear(32, 1))
    return netG, netD


def wgan_gp() -> vd.Findings:
    """caogang/wgan-gp gan_toy.py's loop: five critic steps per generator step, the
    gradient penalty through interpolates that require grad, the critic's requires_grad
    switched off for the generator step."""
    netG, netD = _critic()
    optimizerD = torch.optim.Adam(netD.parameters(), lr=1e-4, betas=(0.5, 0.9))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=1e-4, betas=(0.5, 0.9))
    session = vd.watch(netD)
    for _ in range(60):
        for p in netD.parameters():
            p.requires_grad = True
        for _ in range(5):
            real = torch.randn(64, 16) * 0.5 + 1
            netD.zero_grad()
            d_real = netD(real).mean()
            with torch.no_grad():
                fake = netG(torch.randn(64, 8))
            d_fake = netD(fake).mean()
            alpha = torch.rand(64, 1)
            interpolates = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
            out = netD(interpolates)
            grads = torch.autograd.grad(out, interpolates, torch.ones_like(out),
                                        create_graph=True)[0]
            penalty = ((grads.norm(2, dim=1) - 1) ** 2).mean() * 10
            d_cost = d_fake - d_real + penalty
            d_cost.backward()
            optimizerD.step()
        for p in netD.parameters():
            p.requires_grad = False
        netG.zero_grad()
        g_cost = -netD(netG(torch.randn(64, 8))).mean()
        g_cost.backward()
        optimizerG.step()
        session.log(d_loss=d_cost.item(), g_loss=g_cost.item())
    return _finish(session)


def test_a_wgan_gp_loop_is_clean():
    assert _alarms(_run(wgan_gp)) == []


# -- 4. small batches ----------------------------------------------------------------------
def char_rnn_per_sample(steps: int = 1500) -> vd.Findings:
    """The char-RNN classification tutorial's loop: one name (a sequence) per step, the RNN
    unrolled by hand, ``loss.backward()`` then a hand-written SGD update
    (``p.data.add_(p.grad.data, alpha=-learning_rate)``) and ``rnn.zero_grad()``. Names
    of adjacent categories share a letter; lr 0.005 -> 0.02 for 1500 steps instead of
    100000. Its per-sample loss falls 1.38 -> 0.2, with the odd ambiguous name at 1-3."""
    torch.manual_seed(0)
    n_letters, n_hidden, n_categories = 12, 32, 4

    class RNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.i2h = nn.Linear(n_letters + n_hidden, n_hidden)
            self.h2o = nn.Linear(n_letters + n_hidden, n_categories)

        def forward(self, letter, hidden):
            both = torch.cat((letter, hidden), 1)
            return F.log_softmax(self.h2o(both), dim=1), torch.tanh(self.i2h(both))

    rnn, criterion, learning_rate = RNN(), nn.NLLLoss(), 0.02
    gen = torch.Generator().manual_seed(0)
    session = vd.watch(rnn)
    for _ in range(steps):
        category = int(torch.randint(n_categories, (1,), generator=gen))
        length = int(torch.randint(2, 5, (1,), generator=gen))
        letters = (torch.randint(4, (length,), generator=gen) + 3 * category) % n_letters
        line = F.one_hot(letters, n_letters).float().unsqueeze(1)
        hidden = torch.zeros(1, n_hidden)
        rnn.zero_grad()
        for i in range(length):
            output, hidden = rnn(line[i], hidden)
        loss = criterion(output, torch.tensor([category]))
        loss.backward()
        for p in rnn.parameters():
            p.data.add_(p.grad.data, alpha=-learning_rate)
        session.log(loss=loss.item())
    return _finish(session)


def bn_net_batch4(epochs: int = 3) -> vd.Findings:
    """The CIFAR-10 tutorial's recipe (batch 4, SGD lr=0.001, momentum 0.9,
    ``running_loss``) on a small conv-BN net over synthetic two-class images."""
    torch.manual_seed(0)
    x = torch.randn(800, 1, 8, 8)
    y = (x[:, 0, :4].mean((1, 2)) > x[:, 0, 4:].mean((1, 2))).long()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=4,
                                         shuffle=True,
                                         generator=torch.Generator().manual_seed(0))
    net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(128, 2))
    optimizer = torch.optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
    session = vd.watch(net, loader=loader)
    for _ in range(epochs):
        for inputs, labels in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(net(inputs), labels)
            loss.backward()
            optimizer.step()
            session.log(loss=loss)
    return _finish(session)


@pytest.mark.parametrize("program", [char_rnn_per_sample, bn_net_batch4])
def test_the_loss_of_tiny_batches_is_noisy_not_unstable(program):
    assert _alarms(_run(program)) == []


# -- 5. mixed precision --------------------------------------------------------------------
def amp_gradscaler() -> vd.Findings:
    """The AMP recipe's loop on the CPU: fp16 autocast around forward and loss,
    ``scaler.scale(loss).backward(); scaler.step(opt); scaler.update()``,
    ``zero_grad(set_to_none=True)``. Its targets are large enough that the first steps'
    scaled gradients overflow: the scaler skips them and lowers its scale, as designed."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                        nn.Linear(128, 16))
    teacher = nn.Sequential(nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 16))
    teacher.requires_grad_(False)
    data = [torch.randn(64, 64) for _ in range(20)]
    targets = [teacher(x) * 300 for x in data]
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu")
    session = vd.watch(net, every=1)
    for _ in range(5):
        for x, target in zip(data, targets):
            with torch.autocast(device_type="cpu", dtype=torch.float16):
                loss = F.mse_loss(net(x), target)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)
            session.log(loss=loss)
    assert scaler.get_scale() < 65536.0  # (the scaler did skip overflowing steps)
    return _finish(session)


def test_steps_a_gradscaler_skips_are_not_exploding_gradients():
    found = _run(amp_gradscaler)
    assert _alarms(found) == []
    assert [f.severity for f in found if f.code == "exploding-gradients"] == ["info"]


# -- 6. a gradient norm that starts high -----------------------------------------------------
def converging_regression() -> vd.Findings:
    """Linear regression whose first error is large: the gradient norm peaks at step 0 and
    falls a hundredfold as the loss converges."""
    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(4096, 8)
    y = x @ (30 * torch.randn(8, 1)) + torch.randn(4096, 1)
    session = vd.watch(model, every=1)
    for i in range(300):
        j = (i * 32) % 4096
        opt.zero_grad()
        loss = F.mse_loss(model(x[j:j + 32]), y[j:j + 32])
        loss.backward()
        opt.step()
        session.log(loss=loss)
    return _finish(session)


def test_a_gradient_norm_that_starts_at_its_peak_is_not_growth():
    assert _alarms(_run(converging_regression)) == []


# -- 7. frozen backbone --------------------------------------------------------------------
def frozen_backbone(validate_in_eval: bool = False) -> vd.Findings:
    """The fine-tuning tutorial's feature extraction: every parameter of the pretrained
    model ``requires_grad=False``, a new head, the optimizer over the head only; the model
    in ``eval()`` so that the frozen BatchNorm keeps its statistics and dropout is off in
    the backbone, the new head in ``train()``. ``validate_in_eval``: the fault, a
    trainable model left in eval mode by validation."""
    torch.manual_seed(0)
    backbone = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                             nn.Dropout(0.2), nn.AdaptiveAvgPool2d(1), nn.Flatten())
    model = nn.Sequential(backbone, nn.Linear(8, 2))
    x = torch.randn(512, 1, 8, 8)
    y = (x.mean((1, 2, 3)) > 0).long()
    if not validate_in_eval:
        for p in model.parameters():
            p.requires_grad = False
        model[1] = nn.Linear(8, 2)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05,
                          momentum=0.9)
    session = vd.watch(model, every=1)
    for _ in range(4):
        model.eval()
        model[1].train()
        for i in range(0, 512, 32):
            opt.zero_grad()
            loss = F.cross_entropy(model(x[i:i + 32]), y[i:i + 32])
            loss.backward()
            opt.step()
            session.log(loss=loss)
    return _finish(session)


def test_a_frozen_backbone_in_eval_mode_is_the_recipe_not_a_fault():
    assert _alarms(_run(frozen_backbone)) == []
    assert "train-eval-mode" in _run(frozen_backbone, validate_in_eval=True).codes


# -- 8. optimizers that are not a plain step() ---------------------------------------------
def lbfgs_closure() -> vd.Findings:
    """pytorch/examples time_sequence_prediction: ``optimizer.step(closure)`` with LBFGS,
    whose closure zeroes, evaluates and backpropagates several times per step; here it
    converges in the first steps and then ends each step on its tolerance."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
    x = torch.randn(256, 4)
    y = torch.sin(x.sum(1, keepdim=True))
    optimizer = torch.optim.LBFGS(model.parameters(), lr=0.8)
    session = vd.watch(model, every=1)
    for _ in range(15):
        def closure():
            optimizer.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            return loss
        session.log(loss=optimizer.step(closure))
    return _finish(session)


def test_lbfgs_with_a_closure_is_clean():
    assert _alarms(_run(lbfgs_closure)) == []
