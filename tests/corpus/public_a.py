"""Working public programs ported small (part a): each cited with its repository,
path and commit or URL, keeping its own loop idioms. vizdebug must give none of them a
warning or an error.

Part a holds the two-model and structural idioms: GANs (DCGAN, WGAN-GP, conditional GAN),
a VAE, LBFGS with a closure, knowledge distillation, a frozen backbone, lazy modules,
multi-output heads, siamese and triplet networks, EMA and SWA weight averaging. Each
program is written as ``_name()`` returning ``(findings, extras)`` (the trained models, for
checking the result by hand) and registered through a thin wrapper that returns the
findings. The final metric in each docstring is what the port measured.
"""

from __future__ import annotations

import copy
import random

import numpy as np
import torch
from torch import nn, optim
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset, TensorDataset

import vizdebug as vd

from . import Control
from ._data import digits, loader
from ._loop import finish


def _seeded_loader(ds: Dataset, batch_size: int, shuffle: bool = True,
                   seed: int = 0) -> DataLoader:
    return DataLoader(ds, batch_size=batch_size, shuffle=shuffle,
                      generator=torch.Generator().manual_seed(seed))


def _digits01():
    """Digits as (N, 1, 8, 8) float32 in [0, 1] (ToTensor's range) and int64 labels."""
    xtr, xte, ytr, yte = digits()
    return xtr / 16.0, xte / 16.0, ytr, yte


# --------------------------------------------------------------------------------------
# 1. DCGAN: pytorch/examples dcgan/main.py
# --------------------------------------------------------------------------------------

_NZ, _NGF, _NDF = 16, 16, 16


def _dcgan_init(m: nn.Module) -> None:
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


class _DCGenerator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.main = nn.Sequential(  # z (nz x 1 x 1) -> 2x2 -> 4x4 -> 8x8
            nn.ConvTranspose2d(_NZ, _NGF * 4, 2, 1, 0, bias=False),
            nn.BatchNorm2d(_NGF * 4), nn.ReLU(True),
            nn.ConvTranspose2d(_NGF * 4, _NGF * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(_NGF * 2), nn.ReLU(True),
            nn.ConvTranspose2d(_NGF * 2, 1, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class _DCDiscriminator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.main = nn.Sequential(  # 8x8 -> 4x4 -> 2x2 -> 1x1
            nn.Conv2d(1, _NDF, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(_NDF, _NDF * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(_NDF * 2), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(_NDF * 2, 1, 2, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


def _dcgan():
    """DCGAN on digits scaled to [-1, 1] (``Normalize((0.5,), (0.5,))``), the loop of
    pytorch/examples dcgan/main.py: D steps on a real batch then on ``fake.detach()``
    (two backward passes, one ``optimizerD.step()``), then G steps on ``netD(fake)`` with
    real labels; two Adam(lr=2e-4, betas=(0.5, 0.999)), BCELoss, D ends in Sigmoid, G in
    Tanh, ``weights_init`` applied to both. The practitioner watches the discriminator,
    which reads the loader's real batches. Shrunk: three layers each side (8x8 images),
    nz=ngf=ndf=16, 12 epochs of batch 64.

    Measured: Loss_D 1.39 -> ~1.0-1.3, Loss_G ~0.9-1.3 (no collapse), D(x) ~0.6; the mean
    generated image is within 0.07 (mean abs, [-1, 1] scale) of the mean real digit and
    the per-sample pixel std of fakes matches the real one (0.63 vs 0.66)."""
    torch.manual_seed(0)
    xtr, _, ytr, _ = _digits01()
    real = xtr * 2 - 1
    dataloader = loader(real, ytr, batch_size=32)
    netG, netD = _DCGenerator(), _DCDiscriminator()
    netG.apply(_dcgan_init)
    netD.apply(_dcgan_init)
    criterion = nn.BCELoss()
    real_label, fake_label = 1, 0
    optimizerD = optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    checks = vd.check_batch(next(iter(dataloader)))
    session = vd.watch(netD, loader=dataloader)
    for _epoch in range(15):
        for _i, data in enumerate(dataloader, 0):
            # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
            netD.zero_grad()
            real_cpu = data[0]
            batch_size = real_cpu.size(0)
            label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype)
            output = netD(real_cpu)
            errD_real = criterion(output, label)
            errD_real.backward()
            D_x = output.mean().item()

            noise = torch.randn(batch_size, _NZ, 1, 1)
            fake = netG(noise)
            label.fill_(fake_label)
            output = netD(fake.detach())
            errD_fake = criterion(output, label)
            errD_fake.backward()
            errD = errD_real + errD_fake
            optimizerD.step()

            # (2) Update G network: maximize log(D(G(z)))
            netG.zero_grad()
            label.fill_(real_label)  # fake labels are real for generator cost
            output = netD(fake)
            errG = criterion(output, label)
            errG.backward()
            optimizerG.step()
            session.log(Loss_D=errD.item(), Loss_G=errG.item(), D_x=D_x)
    return finish(session, checks), {"netG": netG, "netD": netD, "real": real}


# --------------------------------------------------------------------------------------
# 2. WGAN-GP on 2-d toy data: caogang/wgan-gp gan_toy.py
# --------------------------------------------------------------------------------------

_TOY_DIM, _TOY_BATCH = 64, 64


class _ToyGenerator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.main = nn.Sequential(
            nn.Linear(2, _TOY_DIM), nn.ReLU(True),
            nn.Linear(_TOY_DIM, _TOY_DIM), nn.ReLU(True),
            nn.Linear(_TOY_DIM, _TOY_DIM), nn.ReLU(True),
            nn.Linear(_TOY_DIM, 2),
        )

    def forward(self, noise, real_data):
        return self.main(noise)


class _ToyCritic(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.main = nn.Sequential(
            nn.Linear(2, _TOY_DIM), nn.ReLU(True),
            nn.Linear(_TOY_DIM, _TOY_DIM), nn.ReLU(True),
            nn.Linear(_TOY_DIM, _TOY_DIM), nn.ReLU(True),
            nn.Linear(_TOY_DIM, 1),
        )

    def forward(self, inputs):
        return self.main(inputs).view(-1)


def _toy_init(m: nn.Module) -> None:
    if m.__class__.__name__.find("Linear") != -1:
        m.weight.data.normal_(0.0, 0.02)
        m.bias.data.fill_(0)


_CENTERS = 2.0 * np.array([(1, 0), (-1, 0), (0, 1), (0, -1),
                           (1 / np.sqrt(2), 1 / np.sqrt(2)), (1 / np.sqrt(2), -1 / np.sqrt(2)),
                           (-1 / np.sqrt(2), 1 / np.sqrt(2)),
                           (-1 / np.sqrt(2), -1 / np.sqrt(2))])


def _eight_gaussians(rng: np.random.Generator):
    """The 8gaussians iterator of gan_toy.py (its own infinite generator, no loader)."""
    while True:
        point = rng.normal(size=(_TOY_BATCH, 2)) * 0.02
        point += _CENTERS[rng.integers(0, 8, size=_TOY_BATCH)]
        yield (point / 1.414).astype(np.float32)


def _calc_gradient_penalty(netD, real_data, fake_data, lam: float):
    alpha = torch.rand(_TOY_BATCH, 1)
    alpha = alpha.expand(real_data.size())
    interpolates = alpha * real_data + ((1 - alpha) * fake_data)
    interpolates.requires_grad_(True)
    disc_interpolates = netD(interpolates)
    gradients = torch.autograd.grad(outputs=disc_interpolates, inputs=interpolates,
                                    grad_outputs=torch.ones(disc_interpolates.size()),
                                    create_graph=True, retain_graph=True,
                                    only_inputs=True)[0]
    return ((gradients.norm(2, dim=1) - 1) ** 2).mean() * lam


def _wgan_gp_toy():
    """WGAN-GP on the 8-gaussians toy set, the loop of caogang/wgan-gp gan_toy.py: per
    generator iteration, CRITIC_ITERS=5 critic steps, each with ``D_real.backward(mone)``,
    ``D_fake.backward(one)`` on a fake made from the generator's ``.data`` and the gradient
    penalty through interpolates that require grad (``autograd.grad(create_graph=True)``),
    LAMBDA=0.1; the critic's ``requires_grad`` is switched off for the generator step and
    back on after. Adam(lr=1e-4, betas=(0.5, 0.9)) for both, weights N(0, 0.02). The
    practitioner watches the critic (there is no DataLoader: the data come from the
    program's own generator). Shrunk: DIM 512 -> 128, batch 256 -> 128, 100000 -> 300
    generator iterations, lr 1e-4 -> 1e-3 so that 300 iterations reach the modes.

    Measured: Wasserstein estimate falls from ~1.4 to ~0.1; 90% of 2000 generated points
    lie within 0.25 of one of the 8 centres and all 8 modes are covered (8-14% each)."""
    torch.manual_seed(1)
    rng = np.random.default_rng(1)
    netG, netD = _ToyGenerator(), _ToyCritic()
    netD.apply(_toy_init)
    netG.apply(_toy_init)
    optimizerD = optim.Adam(netD.parameters(), lr=1e-3, betas=(0.5, 0.9))
    optimizerG = optim.Adam(netG.parameters(), lr=1e-3, betas=(0.5, 0.9))
    one = torch.tensor(1.0)
    mone = one * -1
    data = _eight_gaussians(rng)
    session = vd.watch(netD)
    for _iteration in range(600):
        # (1) Update D network
        for p in netD.parameters():  # reset requires_grad
            p.requires_grad = True  # they are set to False below in netG update
        for _iter_d in range(5):
            real_data = torch.tensor(next(data))
            netD.zero_grad()
            D_real = netD(real_data).mean()
            D_real.backward(mone)
            noise = torch.randn(_TOY_BATCH, 2)
            with torch.no_grad():  # totally freeze netG
                fake = netG(noise, real_data).data
            D_fake = netD(fake).mean()
            D_fake.backward(one)
            gradient_penalty = _calc_gradient_penalty(netD, real_data.data, fake.data, 0.1)
            gradient_penalty.backward()
            D_cost = D_fake - D_real + gradient_penalty
            Wasserstein_D = D_real - D_fake
            optimizerD.step()
        # (2) Update G network
        for p in netD.parameters():
            p.requires_grad = False  # to avoid computation
        netG.zero_grad()
        real_data = torch.tensor(next(data))
        noise = torch.randn(_TOY_BATCH, 2)
        fake = netG(noise, real_data)
        G = netD(fake).mean()
        G.backward(mone)
        G_cost = -G
        optimizerG.step()
        session.log(disc_cost=D_cost.item(), gen_cost=G_cost.item(),
                    wasserstein_distance=Wasserstein_D.item())
    return finish(session), {"netG": netG}


# --------------------------------------------------------------------------------------
# 3. Conditional GAN: eriklindernoren/PyTorch-GAN implementations/cgan/cgan.py
# --------------------------------------------------------------------------------------

_LATENT, _N_CLASSES, _IMG_SHAPE = 32, 10, (1, 8, 8)


class _CGenerator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.label_emb = nn.Embedding(_N_CLASSES, _N_CLASSES)

        def block(in_feat, out_feat, normalize=True):
            layers = [nn.Linear(in_feat, out_feat)]
            if normalize:
                layers.append(nn.BatchNorm1d(out_feat, 0.8))
            layers.append(nn.LeakyReLU(0.2, inplace=True))
            return layers

        self.model = nn.Sequential(
            *block(_LATENT + _N_CLASSES, 64, normalize=False),
            *block(64, 128),
            *block(128, 256),
            nn.Linear(256, int(np.prod(_IMG_SHAPE))),
            nn.Tanh(),
        )

    def forward(self, noise, labels):
        gen_input = torch.cat((self.label_emb(labels), noise), -1)
        img = self.model(gen_input)
        return img.view(img.size(0), *_IMG_SHAPE)


class _CDiscriminator(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.label_embedding = nn.Embedding(_N_CLASSES, _N_CLASSES)
        self.model = nn.Sequential(
            nn.Linear(_N_CLASSES + int(np.prod(_IMG_SHAPE)), 128),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(128, 128), nn.Dropout(0.4), nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(128, 128), nn.Dropout(0.4), nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(128, 1),
        )

    def forward(self, img, labels):
        d_in = torch.cat((img.view(img.size(0), -1), self.label_embedding(labels)), -1)
        return self.model(d_in)


def _cgan():
    """Conditional GAN on digits in [-1, 1], the loop of eriklindernoren/PyTorch-GAN
    cgan.py: label embeddings concatenated to the noise (G) and to the flattened image
    (D), least-squares adversarial loss (MSELoss on D's raw output), generator step FIRST
    (random ``gen_labels``), then the discriminator on real images and
    ``gen_imgs.detach()``, ``d_loss = (d_real_loss + d_fake_loss) / 2``; two
    Adam(lr=2e-4, betas=(0.5, 0.999)). The practitioner watches the generator and looks
    at a real batch first. Shrunk: G 64-128-256 (not 128-...-1024), D width 128, latent
    32, 8x8 images, 40 epochs of batch 64 (the paper's lr kept).

    Measured: d_loss ~0.2, g_loss ~0.3-0.5 at the end; a logistic regression fitted on
    real digits labels 60-75% of 1000 generated digits as the class they were asked for
    (chance is 10%)."""
    torch.manual_seed(0)
    np_rng = np.random.default_rng(0)
    xtr, _, ytr, _ = _digits01()
    dataloader = loader(xtr * 2 - 1, ytr, batch_size=64)
    adversarial_loss = nn.MSELoss()
    generator, discriminator = _CGenerator(), _CDiscriminator()
    optimizer_G = optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizer_D = optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    checks = vd.check_batch(next(iter(dataloader)))
    session = vd.watch(generator)
    for _epoch in range(40):
        for _i, (imgs, labels) in enumerate(dataloader):
            batch_size = imgs.shape[0]
            valid = torch.ones(batch_size, 1)
            fake = torch.zeros(batch_size, 1)
            real_imgs = imgs.float()
            labels = labels.long()

            #  Train Generator
            optimizer_G.zero_grad()
            z = torch.tensor(np_rng.normal(0, 1, (batch_size, _LATENT)), dtype=torch.float32)
            gen_labels = torch.tensor(np_rng.integers(0, _N_CLASSES, batch_size))
            gen_imgs = generator(z, gen_labels)
            validity = discriminator(gen_imgs, gen_labels)
            g_loss = adversarial_loss(validity, valid)
            g_loss.backward()
            optimizer_G.step()

            #  Train Discriminator
            optimizer_D.zero_grad()
            validity_real = discriminator(real_imgs, labels)
            d_real_loss = adversarial_loss(validity_real, valid)
            validity_fake = discriminator(gen_imgs.detach(), gen_labels)
            d_fake_loss = adversarial_loss(validity_fake, fake)
            d_loss = (d_real_loss + d_fake_loss) / 2
            d_loss.backward()
            optimizer_D.step()
            session.log(d_loss=d_loss.item(), g_loss=g_loss.item())
    return finish(session, checks), {"generator": generator}


# --------------------------------------------------------------------------------------
# 4. VAE: pytorch/examples vae/main.py
# --------------------------------------------------------------------------------------


class _VAE(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc21 = nn.Linear(128, 8)
        self.fc22 = nn.Linear(128, 8)
        self.fc3 = nn.Linear(8, 128)
        self.fc4 = nn.Linear(128, 64)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 64))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def _vae_loss(recon_x, x, mu, logvar):
    """Reconstruction + KL divergence losses summed over all elements and batch."""
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def _vae():
    """The VAE of pytorch/examples vae/main.py on digits in [0, 1] (ToTensor's range):
    fc1 -> (fc21, fc22) -> reparameterize -> fc3 -> fc4 -> sigmoid, loss = BCE(sum) + KLD
    summed over the batch, Adam(1e-3), ``train_loss += loss.item()``, the per-sample loss
    ``loss.item() / len(data)`` printed (and logged) per batch, the test loss per sample
    once per epoch under ``model.eval()`` and ``torch.no_grad()``. Shrunk: 784-400-20 ->
    64-128-8, 25 epochs of batch 128.

    Measured: per-sample loss 44.4 -> 26.1 (train), test 26.5; reconstructions have mean
    abs error 0.11 per pixel on test digits."""
    torch.manual_seed(1)
    xtr, xte, ytr, yte = _digits01()
    train_loader = loader(xtr, ytr, batch_size=128)
    test_loader = loader(xte, yte, batch_size=128, shuffle=False)
    model = _VAE()
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    session = vd.watch(model, loader=train_loader)
    for _epoch in range(1, 26):
        model.train()
        train_loss = 0
        for _batch_idx, (data, _) in enumerate(train_loader):
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(data)
            loss = _vae_loss(recon_batch, data, mu, logvar)
            loss.backward()
            train_loss += loss.item()
            optimizer.step()
            session.log(loss=loss.item() / len(data))
        model.eval()
        test_loss = 0
        with torch.no_grad():
            for data, _ in test_loader:
                recon_batch, mu, logvar = model(data)
                test_loss += _vae_loss(recon_batch, data, mu, logvar).item()
        test_loss /= len(test_loader.dataset)
        session.log(val_loss=test_loss)
    return finish(session), {"model": model, "xte": xte}


# --------------------------------------------------------------------------------------
# 5. LBFGS with a closure: pytorch/examples time_sequence_prediction/train.py
# --------------------------------------------------------------------------------------

_HID = 24


class _Sequence(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm1 = nn.LSTMCell(1, _HID)
        self.lstm2 = nn.LSTMCell(_HID, _HID)
        self.linear = nn.Linear(_HID, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), _HID, dtype=torch.double)
        c_t = torch.zeros(input.size(0), _HID, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), _HID, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), _HID, dtype=torch.double)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for _ in range(future):  # if we should predict the future
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.cat(outputs, dim=1)


def _lbfgs():
    """The sine-wave LSTMCell predictor of pytorch/examples time_sequence_prediction:
    data from its generate.py (sin((t + shift) / T), T=20), the model in double precision
    (``seq.double()``), full-batch LBFGS(lr=0.8) driven by ``optimizer.step(closure)``
    whose closure zeroes the gradients, prints (here: logs) ``loss.item()`` and
    backpropagates; after each step the test loss under ``torch.no_grad()`` with a
    future prediction. Shrunk: 100 series of length 1000 -> 20 of length 60, 51 -> 24
    hidden, 15 -> 6 steps (LBFGS's default max_iter=20 evaluations per step).

    Measured: loss 0.50 -> 2e-4 (train), test 3e-4 over the known part."""
    np.random.seed(0)
    torch.manual_seed(0)
    T, L, N = 20, 60, 20
    x = np.empty((N, L), "int64")
    x[:] = np.array(range(L)) + np.random.randint(-4 * T, 4 * T, N).reshape(N, 1)
    data = np.sin(x / 1.0 / T).astype("float64")
    input = torch.from_numpy(data[3:, :-1])
    target = torch.from_numpy(data[3:, 1:])
    test_input = torch.from_numpy(data[:3, :-1])
    test_target = torch.from_numpy(data[:3, 1:])
    seq = _Sequence()
    seq.double()
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8)
    session = vd.watch(seq)
    for _i in range(6):
        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            session.log(loss=loss.item())
            loss.backward()
            return loss
        optimizer.step(closure)
        with torch.no_grad():
            future = 20
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            session.log(val_loss=loss.item())
    return finish(session), {"seq": seq}


CONTROLS: list[Control] = []
