"""Faults that are relations: training-protocol relations (gradient cuts, BatchNorm modes, GAN data ranges and discriminators that win at once). Each from a public report, with its fixed twin;
``fixed=False`` runs the code as reported, ``True`` the fix."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

import vizdebug as vd

from . import Fault
from ._data import digits, digits_std, sequences, tabular_std
from ._loop import acc, finish, fit


def _digits_tensors():
    xtr, xte, ytr, yte = digits_std()
    return xtr, ytr, (torch.as_tensor(xte), torch.as_tensor(yte))


def _loader(x, y, batch_size: int, drop_last: bool = False) -> DataLoader:
    ds = TensorDataset(torch.as_tensor(x), torch.as_tensor(y))
    return DataLoader(ds, batch_size=batch_size, shuffle=True, drop_last=drop_last,
                      generator=torch.Generator().manual_seed(0))


# == gradient cut ===========================================================================
class _AdjacencyGCN(nn.Module):
    """A-GCN's adaptive graph: ``adj = softmax(phi(x) theta(x)^T)`` over the nodes (here the
    8 rows of a digit), one graph convolution ``relu(gc(adj @ x))``, mean over nodes."""

    def __init__(self, detach: bool) -> None:
        super().__init__()
        self.detach = detach
        self.phi, self.theta = nn.Linear(8, 16), nn.Linear(8, 16)
        self.gc, self.act, self.fc = nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        nodes = x.flatten(1, 2)  # (B, 8 rows, 8 pixels)
        adj = torch.softmax(self.phi(nodes) @ self.theta(nodes).transpose(1, 2), dim=-1)
        if self.detach:
            adj = adj.detach()  # the reported line: W_phi and W_theta get no gradient
        return self.fc(self.act(self.gc(adj @ nodes)).mean(1))


# Source: https://github.com/queenie88/A-GCN/issues/4
#   "Question about gradient flow": the adjacency matrix built from the W_phi/W_theta
#   projections is detached before the graph convolution, so "how could the two weight
#   matrices be updated?" (the reporter's gist shows their gradients are None). The
#   maintainer: "You are right, the .detach() should be removed", and updated the code.
def gcn_adjacency_detached(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits_tensors()
    model = _AdjacencyGCN(detach=not fixed)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    return fit(model, _loader(xtr, ytr, 64), nn.CrossEntropyLoss(), opt, 5, val, acc)


class _PixelAgent(nn.Module):
    """CIC's agent, shrunk: a conv encoder of the observation and an MLP on its features."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                                     nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.ReLU(),
                                     nn.Flatten())
        self.head = nn.Sequential(nn.Linear(16 * 16, 64), nn.ReLU(), nn.Linear(64, 10))


# Source: https://github.com/rll-research/cic/issues/5
#   "No gradient through the cnn encoder": in the agent's update the observations are
#   encoded inside torch.no_grad(), so the CNN weights are never updated during
#   pre-training although the encoder has its optimizer. The fix: encode outside no_grad
#   for the loss that should train the encoder.
def encoder_under_no_grad(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, (xva, yva) = _digits_tensors()
    agent = _PixelAgent()
    opt = torch.optim.Adam(agent.parameters(), lr=2e-3)  # encoder and head together
    train = _loader(xtr, ytr, 64)
    session = vd.watch(agent, loader=train)
    for _epoch in range(5):
        for obs, target in train:
            if fixed:
                h = agent.encoder(obs)
            else:
                with torch.no_grad():  # the reported update
                    h = agent.encoder(obs)
            loss = F.cross_entropy(agent.head(h), target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            session.log(loss=loss.item())
        agent.eval()
        with torch.no_grad():
            out = agent.head(agent.encoder(xva))
        agent.train()
        session.log(val_loss=float(F.cross_entropy(out, yva)), val_acc=acc(out, yva))
    return finish(session)


class _FrontEndEncoder(nn.Module):
    """A learnable feature front end (a 1-d convolution over the raw sequence), then an
    encoder and a classifier: the shape of a speech recipe's compute_features -> enc."""

    def __init__(self, detach_features: bool) -> None:
        super().__init__()
        self.detach_features = detach_features
        self.features = nn.Sequential(nn.Conv1d(1, 8, 5, padding=2), nn.ReLU())
        self.enc = nn.GRU(8, 16, batch_first=True)
        self.out = nn.Linear(16, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        feats = self.features(x.transpose(1, 2)).transpose(1, 2)  # (batch, time, 8)
        if self.detach_features:  # the recipe's self.modules.enc(feats.detach())
            feats = feats.detach()
        h, _ = self.enc(feats)
        return self.out(h[:, -1])


# Source: https://github.com/speechbrain/speechbrain/issues/1396
#   "Usage of Speechbrain functions breaks PyTorch computation graph": no gradient reached
#   what came before the encoder; the reporter found the culprit, a recipe's
#   `x = self.modules.enc(feats.detach())`, and removing the .detach() brought the
#   gradients back. Ported: a learnable front end before a GRU encoder on the sequence
#   data; with the .detach() its weights, which the optimizer holds, never get a gradient.
def features_detached_before_encoder(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = sequences(n=384, length=16)
    model = _FrontEndEncoder(detach_features=not fixed)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    return fit(model, _loader(xtr, ytr, 32), nn.CrossEntropyLoss(), opt, 6, val, acc)


# == BatchNorm and a last batch of one =====================================================
# Source: https://github.com/openvinotoolkit/nncf/pull/379
#   "Dropped last data point in all DataLoaders to prevent issue with BN": a dataset of
#   1000 points with batch_size=3 leaves a last batch of one, and training fails at the
#   end of the epoch with "ValueError: Expected more than 1 value per channel when
#   training". The fix: drop_last=True in the training loaders.
def bn_mlp_last_batch_of_one(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, xte, ytr, yte = tabular_std("breast_cancer")
    xtr, ytr = xtr[:417], ytr[:417]  # 417 = 13 * 32 + 1
    model = nn.Sequential(nn.Linear(30, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    return fit(model, _loader(xtr, ytr, 32, drop_last=fixed), nn.CrossEntropyLoss(), opt, 6,
               val, acc, crash=ValueError)


# Source: https://github.com/fastai/fastai/issues/1352
#   "Expected more than 1 value per channel when training": a CNN whose head pools the
#   features and normalises them with BatchNorm1d fails after one epoch; the maintainer:
#   the training DataLoader did not use drop_last=True and ran into a batch of size 1,
#   which BatchNorm cannot train on. Fix: drop_last=True.
def bn_cnn_head_last_batch_of_one(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, ytr, val = _digits_tensors()
    xtr, ytr = xtr[:1281], ytr[:1281]  # 1281 = 20 * 64 + 1
    model = nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.BatchNorm1d(16), nn.Dropout(0.25),
        nn.Linear(16, 10))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    return fit(model, _loader(xtr, ytr, 64, drop_last=fixed), nn.CrossEntropyLoss(), opt, 5,
               val, acc, crash=ValueError)


class _PyramidPooling(nn.Module):
    """PSPNet's pyramid pooling, shrunk: a pooled 1x1 branch (conv + BatchNorm2d) added
    back to the features, then a per-pixel classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU())
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(8, 8, 1),
                                  nn.BatchNorm2d(8), nn.ReLU())
        self.classify = nn.Conv2d(8, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        feats = self.stem(x)
        return self.classify(feats + self.pool(feats))


# Source: https://github.com/yassouali/pytorch-segmentation/issues/8
#   "Expected more than 1 value per channel when training" training a PSPNet on VOC with
#   batch size 4; the maintainer: at the last iteration of the epoch only one example is
#   left, and the pyramid-pooling BatchNorm on a 1x1 map cannot train on it; use another
#   batch size (or drop the last batch).
def bn_pyramid_pool_last_batch_of_one(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, _, _, _ = digits()
    x = torch.as_tensor(xtr[:401] / 16.0)  # 401 = 100 * 4 + 1
    masks = (x[:, 0] > 0.5).long()  # segment the stroke from the background
    train = _loader(x, masks, 4, drop_last=fixed)
    model = _PyramidPooling()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    return fit(model, train, nn.CrossEntropyLoss(), opt, 2, crash=ValueError)


# == GANs ==================================================================================
def _unit_digits(fixed: bool) -> torch.Tensor:
    xtr, _, _, _ = digits()
    real = torch.as_tensor(xtr / 16.0).flatten(1)  # [0, 1], as x / 255. does
    return real * 2 - 1 if fixed else real


def _mlp_gan_loop(G: nn.Module, D: nn.Module, loader: DataLoader, watched: nn.Module,
                  epochs: int, z_dim: int, logits: bool) -> vd.Findings:
    """The loop of the Keras book's GAN (and of most tutorials): D on real + fake, then G
    on D(fake) with real labels; Adam(2e-4, betas=(0.5, 0.999)) both sides."""
    opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
    crit = nn.BCEWithLogitsLoss() if logits else nn.BCELoss()
    session = vd.watch(watched, loader=loader)
    for _epoch in range(epochs):
        for (real,) in loader:
            ones, zeros = torch.ones(len(real), 1), torch.zeros(len(real), 1)
            fake = G(torch.randn(len(real), z_dim))
            d_loss = crit(D(real), ones) + crit(D(fake.detach()), zeros)
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()
            g_loss = crit(D(fake), ones)
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
            session.log(d_loss=d_loss.item(), g_loss=g_loss.item())
    return finish(session)


def _real_loader(real: torch.Tensor, batch_size: int) -> DataLoader:
    return DataLoader(TensorDataset(real), batch_size=batch_size, shuffle=True,
                      generator=torch.Generator().manual_seed(0))


# Source: https://github.com/fchollet/deep-learning-with-python-notebooks/issues/7
#   "Change in activation function in 8.5": the book's GAN generates noise; its generator
#   ends in tanh ([-1, 1]) while the training images are divided by 255 ([0, 1]). A
#   commenter's fix: normalise the images to [-1, 1] ((x - 127.5) / 127.5).
#   Here the practitioner watches the discriminator, which reads the loader's batches.
def gan_unit_images_tanh_generator(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    loader = _real_loader(_unit_digits(fixed), 64)
    G = nn.Sequential(nn.Linear(16, 128), nn.LeakyReLU(0.2), nn.Linear(128, 64), nn.Tanh())
    D = nn.Sequential(nn.Linear(64, 128), nn.LeakyReLU(0.2), nn.Dropout(0.3),
                      nn.Linear(128, 1), nn.Sigmoid())
    return _mlp_gan_loop(G, D, loader, D, 6, 16, logits=False)


# Source: https://github.com/junyanz/pytorch-CycleGAN-and-pix2pix/issues/910
#   "loss_D zero, loss_G increasing": after a while Loss_D read 0.0000 and Loss_G kept
#   growing (34.6), the generated pictures very bad. The maintainer: increase the capacity
#   of the generator and/or decrease the capacity of the discriminator (its channels and
#   layers); the reporter did and the losses went back to normal. Ported: a wide, deep
#   discriminator against a generator with an 8-unit bottleneck, on [-1, 1] digits and a
#   tanh generator (no range mismatch); the fix balances the two.
def discriminator_outgrows_generator(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    loader = _real_loader(_unit_digits(True), 64)
    width = 32 if fixed else 8
    G = nn.Sequential(nn.Linear(16, width), nn.ReLU(), nn.Linear(width, 64), nn.Tanh())
    layers = ([nn.Linear(64, 64), nn.LeakyReLU(0.2)] if fixed else
              [nn.Linear(64, 512), nn.LeakyReLU(0.2), nn.Linear(512, 512), nn.LeakyReLU(0.2)])
    D = nn.Sequential(*layers, nn.Linear(layers[0].out_features, 1))
    return _mlp_gan_loop(G, D, loader, D, 8, 16, logits=True)


# Source: https://github.com/BadourAlBahar/pose-with-style/issues/23
#   "Discriminator loss too low": after a few epochs the discriminator's loss read 0.001
#   and the generator's 5-11. The maintainer: check whether real and fake can be told
#   apart; in their own case the real images had side padding (to make them square) that
#   the fake images did not have in the same form, and D used it; the fix pads the fake
#   images exactly as the real ones. Ported: real digits padded to 8 x 16 with the
#   background value (-1 in [-1, 1]), the generator's 8 x 8 output padded with 0; the fix
#   pads both with -1. Both networks learn at 2e-3, the rate of their StyleGAN2 code.
def discriminator_reads_padding(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    real = F.pad(_unit_digits(True).view(-1, 8, 8), (4, 4), value=-1.0).flatten(1)
    fill = -1.0 if fixed else 0.0

    class Padded(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.Linear(16, 128), nn.ReLU(), nn.Linear(128, 64),
                                      nn.Tanh())

        def forward(self, z: torch.Tensor) -> torch.Tensor:
            return F.pad(self.body(z).view(-1, 8, 8), (4, 4), value=fill).flatten(1)

    G = Padded()
    D = nn.Sequential(nn.Linear(128, 128), nn.LeakyReLU(0.2), nn.Linear(128, 1))
    return _two_speed_loop(G, D, _real_loader(real, 32), (2e-3, 2e-3), 1, 6)


def _two_speed_loop(G: nn.Module, D: nn.Module, loader: DataLoader, lrs: tuple[float, float],
                    d_steps: int, epochs: int) -> vd.Findings:
    """A GAN loop with its own learning rates (D's, G's) and ``d_steps`` discriminator
    updates per generator update (the CycleGAN-in-Keras settings), watching the generator."""
    opt_d = torch.optim.Adam(D.parameters(), lr=lrs[0], betas=(0.5, 0.999))
    opt_g = torch.optim.Adam(G.parameters(), lr=lrs[1], betas=(0.5, 0.999))
    crit = nn.BCEWithLogitsLoss()
    session = vd.watch(G)
    for _epoch in range(epochs):
        for (real,) in loader:
            ones, zeros = torch.ones(len(real), 1), torch.zeros(len(real), 1)
            for _ in range(d_steps):
                fake = G(torch.randn(len(real), 16)).detach()
                d_loss = crit(D(real), ones) + crit(D(fake), zeros)
                opt_d.zero_grad()
                d_loss.backward()
                opt_d.step()
            g_loss = crit(D(G(torch.randn(len(real), 16))), ones)
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
            session.log(loss_D=d_loss.item(), loss_G=g_loss.item())
    return finish(session)


# Source: https://github.com/simontomaskarlsson/GAN-MRI/issues/11
#   "Loss D goes to zero": training their CycleGAN, loss D went to zero and loss G went up.
#   The author: the discriminator beats the generator and so stops both from improving;
#   change the model settings, especially the learning rates and the generator and
#   discriminator iterations (their defaults train well). Ported: a discriminator with a
#   ten times larger learning rate and five updates per generator update, the generator
#   watched; the fix uses one learning rate and one update each.
def discriminator_trained_faster(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.Tanh())
    D = nn.Sequential(nn.Linear(64, 256), nn.LeakyReLU(0.2), nn.Linear(256, 1))
    loader = _real_loader(_unit_digits(True), 64)
    return _two_speed_loop(G, D, loader, (2e-4 if fixed else 2e-3, 2e-4), 1 if fixed else 5, 4)


class _ConvGenerator(nn.Module):
    """Pokemon_GAN's generator, shrunk: project, two transposed convolutions with
    BatchNorm, ``tanh`` to generate the final images."""

    def __init__(self, out: nn.Module) -> None:
        super().__init__()
        self.project = nn.Linear(16, 32 * 2 * 2)
        self.up = nn.Sequential(nn.ConvTranspose2d(32, 16, 4, 2, 1), nn.BatchNorm2d(16),
                                nn.ReLU(), nn.ConvTranspose2d(16, 1, 4, 2, 1), out)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.up(self.project(z).view(-1, 32, 2, 2)).flatten(1)


# Source: https://github.com/llSourcell/Pokemon_GAN/issues/11
#   "Code questions.. or Typos?": the generator uses tanh to generate the final images
#   while the images' values are between 0 and 1; "would not the sigmoid activation be
#   the better choice here?" — a commenter got no good results from the code. The fix
#   taken here: end the generator in Sigmoid, the range of the [0, 1] images. The
#   practitioner watches the generator, with the loader of real images.
def gan_conv_generator_tanh_unit_images(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    loader = _real_loader(_unit_digits(False), 64)
    G = _ConvGenerator(nn.Sigmoid() if fixed else nn.Tanh())
    D = nn.Sequential(nn.Linear(64, 128), nn.LeakyReLU(0.2), nn.Linear(128, 1))
    return _mlp_gan_loop(G, D, loader, G, 6, 16, logits=True)


class _CondDiscriminator(nn.Module):
    """A conditional discriminator: the image and its label's embedding, concatenated."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 8)
        self.net = nn.Sequential(nn.Linear(64 + 8, 128), nn.LeakyReLU(0.2), nn.Linear(128, 1))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([x, self.embed(y)], 1))


# Source: https://github.com/fchollet/deep-learning-with-python-notebooks/pull/112
#   "generated images have the undesired effect of bright, single-colored pots": the
#   final layer of the generator uses tanh, [-1, 1], unlike the real images, which are in
#   [0, 1]; "the training process ... can also be altered accordingly if we have the
#   generator output's range be consistent with the real images range". Here a
#   conditional GAN (labels embedded on both sides), generator step first, least-squares
#   loss; the fix scales the real images to [-1, 1]. The discriminator is watched.
def cgan_unit_images_tanh_generator(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    xtr, _, ytr, _ = digits()
    real = torch.as_tensor(xtr / 16.0).flatten(1)
    real = real * 2 - 1 if fixed else real
    loader = DataLoader(TensorDataset(real, torch.as_tensor(ytr)), batch_size=64,
                        shuffle=True, generator=torch.Generator().manual_seed(0))
    G = nn.Sequential(nn.Linear(16 + 10, 128), nn.ReLU(), nn.Linear(128, 64), nn.Tanh())
    D = _CondDiscriminator()
    opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
    session = vd.watch(D, loader=loader)
    for _epoch in range(6):
        for imgs, labels in loader:
            gen_labels = torch.randint(0, 10, (len(imgs),))
            z = torch.cat([torch.randn(len(imgs), 16), F.one_hot(gen_labels, 10).float()], 1)
            gen = G(z)
            g_loss = F.mse_loss(D(gen, gen_labels), torch.ones(len(imgs), 1))
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
            d_loss = (F.mse_loss(D(imgs, labels), torch.ones(len(imgs), 1))
                      + F.mse_loss(D(gen.detach(), gen_labels), torch.zeros(len(imgs), 1))) / 2
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()
            session.log(d_loss=d_loss.item(), g_loss=g_loss.item())
    return finish(session)


FAULTS: list[Fault] = [
    Fault("relations/gcn-adjacency-detached", gcn_adjacency_detached, "graph-cut", "theta",
          "github.com/queenie88/A-GCN/issues/4"),
    Fault("relations/encoder-under-no-grad", encoder_under_no_grad, "graph-cut", "encoder",
          "github.com/rll-research/cic/issues/5"),
    Fault("relations/features-detached-before-encoder", features_detached_before_encoder,
          "graph-cut", "features", "github.com/speechbrain/speechbrain/issues/1396"),
    Fault("relations/bn-mlp-last-batch-of-one", bn_mlp_last_batch_of_one,
          "batchnorm-small-batch", "1", "github.com/openvinotoolkit/nncf/pull/379"),
    Fault("relations/bn-cnn-head-last-batch-of-one", bn_cnn_head_last_batch_of_one,
          "batchnorm-small-batch", "5", "github.com/fastai/fastai/issues/1352"),
    Fault("relations/bn-pyramid-pool-last-batch-of-one", bn_pyramid_pool_last_batch_of_one,
          "batchnorm-small-batch", "pool.2", "github.com/yassouali/pytorch-segmentation/issues/8"),
    Fault("relations/gan-unit-images-tanh-generator", gan_unit_images_tanh_generator,
          "gan-range-mismatch", None,
          "github.com/fchollet/deep-learning-with-python-notebooks/issues/7"),
    Fault("relations/discriminator-outgrows-generator", discriminator_outgrows_generator,
          "discriminator-wins", None,
          "github.com/junyanz/pytorch-CycleGAN-and-pix2pix/issues/910"),
    Fault("relations/discriminator-reads-padding", discriminator_reads_padding,
          "discriminator-wins", None, "github.com/BadourAlBahar/pose-with-style/issues/23"),
    Fault("relations/discriminator-trained-faster", discriminator_trained_faster,
          "discriminator-wins", None, "github.com/simontomaskarlsson/GAN-MRI/issues/11"),
    Fault("relations/gan-conv-generator-tanh-unit-images", gan_conv_generator_tanh_unit_images,
          "gan-range-mismatch", "up.4", "github.com/llSourcell/Pokemon_GAN/issues/11"),
    Fault("relations/cgan-unit-images-tanh-generator", cgan_unit_images_tanh_generator,
          "gan-range-mismatch", None,
          "github.com/fchollet/deep-learning-with-python-notebooks/pull/112"),
]
