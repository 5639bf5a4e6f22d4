"""Faults that are relations: leakage beyond exact copies (oversampling before the split,
overlapping windows in both splits, test times inside the training range, identifier
columns, groups in both splits). Each from a public report, with its fixed twin;
``fixed=False`` runs the code as reported, ``True`` the fix.

The relations ``vd.check_split`` measures are between the test rows and the training
rows, read against the training rows' relation to themselves or against chance: a test
row lying exactly on the segment between two training rows (SMOTE's interpolation); a test
window holding a training window's values shifted by a few steps; test times before the
last training time; a row id whose lookup predicts the test targets better than the same
lookup with shuffled targets; groups (patients, persons) with rows on both sides."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from torch import nn

import vizdebug as vd

from . import Fault
from ._data import loader, split, standardise
from ._loop import acc, binary_acc, fit


def _smote(x: np.ndarray, y: np.ndarray, k: int = 5, seed: int = 0):
    """imblearn's SMOTE rule (``fit_resample``): new minority rows at a uniform point of the
    segment from a minority row to one of its ``k`` nearest minority neighbours."""
    from sklearn.neighbors import NearestNeighbors

    rng = np.random.default_rng(seed)
    classes, counts = np.unique(y, return_counts=True)
    xs, ys = [x], [y]
    for c, n in zip(classes, counts, strict=True):
        need = counts.max() - n
        if need == 0:
            continue
        xc = x[y == c]
        nbr = NearestNeighbors(n_neighbors=k + 1).fit(xc).kneighbors(xc)[1][:, 1:]
        i = rng.integers(0, len(xc), need)
        j = nbr[i, rng.integers(0, k, need)]
        lam = rng.random((need, 1)).astype(x.dtype)
        xs.append(xc[i] + lam * (xc[j] - xc[i]))
        ys.append(np.full(need, c, dtype=y.dtype))
    return np.concatenate(xs), np.concatenate(ys)


def _transactions(n: int = 2400, seed: int = 0):
    """Card transactions: PCA-like components V1..V12 and an amount; 3% are fraud."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.03).astype(np.float32)
    v = rng.normal(size=(n, 12)) + y[:, None] * rng.normal(0, 1.2, 12)[None]
    amount = rng.lognormal(3.5 + 0.6 * y, 1.0)
    return np.column_stack([v, amount]).astype(np.float32), y


# Source: https://github.com/georgymh/ml-fraud-detection/issues/1
#   "Using SMOTE before dividing into training and test sets": "the oversampling algorithm
#   will leak information from the test set onto the training sets, which explains why you
#   got such a magical f1 score"; the author: "You're totally right ... It's fixed now"
#   (split first, SMOTE the training split only). Ported: a credit-card-fraud table (3%
#   fraud), SMOTE to 50/50, an MLP with BCEWithLogitsLoss.
def smote_before_split(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    x, y = _transactions()
    if fixed:
        xtr, xte, ytr, yte = split(x, y)
        xtr, ytr = _smote(xtr, ytr)  # the training split only
    else:
        xtr, xte, ytr, yte = split(*_smote(x, y))  # every row, then the split
    checks = vd.check_split(xtr, xte, y_train=ytr, y_test=yte)
    xtr, xte = (a.astype(np.float32) for a in standardise(xtr, xte))
    model = nn.Sequential(nn.Linear(13, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    val = (torch.as_tensor(xte), torch.as_tensor(yte[:, None]))
    return fit(model, loader(xtr, ytr[:, None], 64), nn.BCEWithLogitsLoss(), opt, 3, val,
               binary_acc, checks=checks)


def _energy(steps: int = 2000, seed: int = 0) -> np.ndarray:
    """A four-channel appliance-energy-like series: daily and weekly cycles, noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(steps)[:, None]
    phase = rng.uniform(0, 2 * np.pi, 4)
    series = np.sin(2 * np.pi * t / 24 + phase) + 0.5 * np.sin(2 * np.pi * t / 168 + phase)
    return (series + rng.normal(0, 0.2, (steps, 4))).astype(np.float32)


def _windows(series: np.ndarray, length: int):
    """Every window of ``length`` steps (stride 1) and the next value of channel 0."""
    starts = np.arange(series.shape[0] - length)
    x = np.stack([series[s:s + length] for s in starts])
    return x, series[starts + length, :1]


class _Forecaster(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(4, 32, batch_first=True)
        self.head = nn.Linear(32, 1)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.head(out[:, -1])


# Source: https://github.com/Y-debug-sys/Diffusion-TS/issues/67
#   "Data leakage train test split": "You first create sliding windows and then you shuffle
#   them. But due to the overlap between the windows you model has information about all
#   the samples in the test set ... each sample in the test_data is at least partly already
#   in the train_data"; the maintainer: the paper's runs took "the first 90% for training,
#   the last 10% for testing" (the option to disable shuffling). Ported: windows of 24
#   steps over a four-channel energy series, a GRU forecasting the next value.
def windows_shuffled_into_both_splits(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    series = _energy()
    if fixed:
        cut = int(0.9 * series.shape[0])  # split the series in time, then cut windows
        xtr, ytr = _windows(series[:cut], 24)
        xte, yte = _windows(series[cut:], 24)
    else:
        x, y = _windows(series, 24)
        xtr, xte, ytr, yte = split(x, y, test=0.1)
    checks = vd.check_split(xtr, xte, y_train=ytr, y_test=yte)
    model = _Forecaster()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    val = (torch.as_tensor(xte), torch.as_tensor(yte))
    return fit(model, loader(xtr, ytr, 64), nn.MSELoss(), opt, 3, val, checks=checks)


def _prices(days: int = 1500, seed: int = 0) -> pd.DataFrame:
    """Daily bars of one instrument: a random walk with regimes, its indicators, and the
    trend label (the close above its 50-day average), as a DataFrame with its dates."""
    rng = np.random.default_rng(seed)
    drift = np.repeat(rng.normal(0, 0.004, days // 100 + 1), 100)[:days]
    close = 100 * np.exp(np.cumsum(drift + rng.normal(0, 0.01, days)))
    s = pd.Series(close)
    frame = pd.DataFrame({
        "date": pd.bdate_range("2012-01-02", periods=days),
        "ret_5": s.pct_change(5), "ret_20": s.pct_change(20),
        "vol_20": s.pct_change().rolling(20).std(),
        "ma_ratio": s / s.rolling(20).mean() - 1,
        "label": (s > s.rolling(50).mean()).astype(np.int64)})
    return frame.iloc[60:].reset_index(drop=True)


# Source: https://github.com/BlackArbsCEO/Adv_Fin_ML_Exercises/issues/23
#   "Ch3 Notebook: Random Forest Model": train_test_split(X, y, test_size=0.5) "shuffles
#   the data by default ... it introduces look ahead bias into the time series"; the fix
#   (commit dd47196): train_test_split(X, y, test_size=0.5, shuffle=False). Ported: daily
#   indicators of a price series and its trend label, a small MLP instead of the forest.
def forecast_split_shuffled(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    frame = _prices()
    features, labels = frame.drop(columns="label"), frame["label"].to_numpy()
    half = len(frame) // 2
    if fixed:  # shuffle=False: the first half trains, the later half tests
        tr, te = np.arange(half), np.arange(half, len(frame))
    else:
        order = np.random.default_rng(0).permutation(len(frame))
        tr, te = order[:half], order[half:]
    checks = vd.check_split(features.iloc[tr], features.iloc[te], y_train=labels[tr],
                            y_test=labels[te])
    x = features.drop(columns="date").to_numpy(np.float32)
    xtr, xte = (a.astype(np.float32) for a in standardise(x[tr], x[te]))
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    val = (torch.as_tensor(xte), torch.as_tensor(labels[te]))
    return fit(model, loader(xtr, labels[tr], 32), nn.CrossEntropyLoss(), opt, 4, val, acc,
               checks=checks)


def _events(users: int = 300, seed: int = 0) -> pd.DataFrame:
    """App events exported unshuffled: each user's events sit in one run of rows, numbered
    in export order; the label is the user's demographic group (one of four)."""
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 4, users)
    runs = rng.integers(2, 9, users)
    user = np.repeat(np.arange(users), runs)
    n = user.size
    frame = pd.DataFrame({
        "row_id": np.arange(n) + 1,
        "brand": rng.integers(0, 8, n).astype(float),
        "hour": rng.integers(0, 24, n).astype(float),
        "apps": rng.poisson(3 + 4 * group[user]).astype(float),
        "active": rng.normal(group[user], 0.8)})
    return frame.assign(label=group[user])


# Source: https://medium.com/@Laurae2/row-ids-leaking-detect-it-using-nearest-neighbors-330416a69ff3
#   "Row IDs leaking?!" (Laurae's post from the Kaggle TalkingData forum): the data were
#   extracted "unshuffled, where an occurrence is very likely to happen several times in a
#   row", so "even a relative row id is enough": consecutive rows share their label and
#   the row id predicts it in part; the fix is to keep row ids out of the features (and
#   shuffle before numbering). Ported: app events of users in runs of rows with a row_id,
#   a shuffled split, an MLP over the columns, row_id included.
def row_id_follows_label(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    frame = _events()
    labels = frame.pop("label").to_numpy()
    if fixed:
        frame = frame.drop(columns="row_id")  # the id is not a feature
    order = np.random.default_rng(0).permutation(len(frame))
    tr, te = order[: int(0.75 * len(frame))], order[int(0.75 * len(frame)):]
    checks = vd.check_split(frame.iloc[tr], frame.iloc[te], y_train=labels[tr],
                            y_test=labels[te])
    x = frame.to_numpy(np.float32)
    xtr, xte = (a.astype(np.float32) for a in standardise(x[tr], x[te]))
    model = nn.Sequential(nn.Linear(x.shape[1], 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    val = (torch.as_tensor(xte), torch.as_tensor(labels[te]))
    return fit(model, loader(xtr, labels[tr], 32), nn.CrossEntropyLoss(), opt, 4, val, acc,
               checks=checks)


def _scans(patients: int = 60, seed: int = 0):
    """Chest-X-ray-like 16 x 16 scans, several per patient (each patient's anatomy, then
    noise and a small shift per scan); the finding is the patient's (a bright lower lobe)."""
    rng = np.random.default_rng(seed)
    sick = rng.random(patients) < 0.5
    per = rng.integers(3, 8, patients)
    yy, xx = np.mgrid[:16, :16] / 15.0
    images, ids = [], []
    for p in range(patients):
        anatomy = rng.normal(0, 0.3, (16, 16)) + np.exp(-((xx - 0.5) ** 2) / 0.1)
        centre = rng.uniform(0.3, 0.7)
        lobe = 0.6 * sick[p] * np.exp(-((yy - 0.75) ** 2 + (xx - centre) ** 2) / 0.03)
        for _ in range(per[p]):
            scan = np.roll(anatomy + lobe, rng.integers(-1, 2), axis=1)
            images.append(scan + rng.normal(0, 0.35, (16, 16)))
            ids.append(p)
    x = np.stack(images)[:, None].astype(np.float32)
    ids = np.asarray(ids)
    return x, sick[ids].astype(np.int64), ids


# Source: https://github.com/Lightning-Universe/lightning-Covid19/issues/11
#   "Possible data leakage?": "On the original dataset, there are several images from the
#   same patient ... Should we take this into account when splitting the data?"; "The
#   problem is that images from a single patient can be in both (all) train, valid (test)
#   sets." The fix is a patient-level split. Ported: several scans per patient, a random
#   split by image versus GroupShuffleSplit by patient, a small CNN; check_split is told
#   the patient of each scan.
def patients_in_both_splits(fixed: bool) -> vd.Findings:
    from sklearn.model_selection import GroupShuffleSplit

    torch.manual_seed(0)
    x, y, patient = _scans()
    if fixed:
        tr, te = next(GroupShuffleSplit(1, test_size=0.25, random_state=0).split(x, y, patient))
    else:
        order = np.random.default_rng(0).permutation(len(x))
        tr, te = order[: int(0.75 * len(x))], order[int(0.75 * len(x)):]
    checks = vd.check_split(x[tr], x[te], y_train=y[tr], y_test=y[te],
                            groups=(patient[tr], patient[te]))
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(8 * 8 * 8, 2))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    val = (torch.as_tensor(x[te]), torch.as_tensor(y[te]))
    return fit(model, loader(x[tr], y[tr], 32), nn.CrossEntropyLoss(), opt, 4, val, acc,
               checks=checks)


def _visits(persons: int = 400, seed: int = 0) -> pd.DataFrame:
    """Outpatient visits of older persons, several each, with their labs; the outcome
    (death within 30 days of a visit) follows the person's own frailty."""
    rng = np.random.default_rng(seed)
    frailty = rng.normal(size=persons)
    visits = rng.integers(2, 9, persons)
    person = np.repeat(np.arange(persons), visits)
    n = person.size
    age = rng.integers(60, 95, persons)[person].astype(float)
    frame = pd.DataFrame({
        "person_id": person + 10_000,
        "age": age,
        "conditions": rng.poisson(2 + np.clip(frailty, 0, None))[person].astype(float),
        "albumin": 4.0 - 0.3 * frailty[person] + rng.normal(0, 0.3, n),
        "creatinine": 1.0 + 0.2 * frailty[person] + rng.normal(0, 0.2, n)})
    risk = 1 / (1 + np.exp(-(2.5 * frailty[person] - 2.0)))
    return frame.assign(outcome=(rng.random(n) < risk).astype(np.float32))


# Source: https://github.com/OHDSI/PatientLevelPrediction/issues/181
#   "personSplitter: Keep all cases of the same patient in either a training fold or the
#   test set": with the randomSplitter "one visit event ... can be placed in the training
#   set while another almost similar visit event from the same patient ... can end up in
#   the test set ... the model will then effortlessly recognise that patient"; the request
#   (implemented as a person-level split) keeps each person on one side. Ported: visits
#   with a person_id column, a logistic regression on the labs, a random split by visit
#   versus a split by person; check_split reads the frames, person_id included.
def visits_of_one_person_in_both_splits(fixed: bool) -> vd.Findings:
    torch.manual_seed(0)
    frame = _visits()
    outcome = frame.pop("outcome").to_numpy()
    if fixed:
        persons = np.random.default_rng(0).permutation(frame["person_id"].unique())
        test_persons = persons[: len(persons) // 4]
        is_test = frame["person_id"].isin(test_persons).to_numpy()
        tr, te = np.flatnonzero(~is_test), np.flatnonzero(is_test)
    else:
        order = np.random.default_rng(0).permutation(len(frame))
        tr, te = order[: int(0.75 * len(frame))], order[int(0.75 * len(frame)):]
    checks = vd.check_split(frame.iloc[tr], frame.iloc[te], y_train=outcome[tr],
                            y_test=outcome[te])
    x = frame.drop(columns="person_id").to_numpy(np.float32)
    xtr, xte = (a.astype(np.float32) for a in standardise(x[tr], x[te]))
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    val = (torch.as_tensor(xte), torch.as_tensor(outcome[te][:, None]))
    return fit(model, loader(xtr, outcome[tr][:, None], 64), nn.BCEWithLogitsLoss(), opt, 4,
               val, binary_acc, checks=checks)


FAULTS: list[Fault] = [
    Fault("smote-before-split", smote_before_split, "split-near-duplicates", "test rows",
          "https://github.com/georgymh/ml-fraud-detection/issues/1"),
    Fault("windows-shuffled-into-both-splits", windows_shuffled_into_both_splits,
          "split-overlap", "test rows", "https://github.com/Y-debug-sys/Diffusion-TS/issues/67"),
    Fault("forecast-split-shuffled", forecast_split_shuffled, "split-time-leak", "date",
          "https://github.com/BlackArbsCEO/Adv_Fin_ML_Exercises/issues/23"),
    Fault("row-id-follows-label", row_id_follows_label, "split-target-leak", "row_id",
          "https://medium.com/@Laurae2/"
          "row-ids-leaking-detect-it-using-nearest-neighbors-330416a69ff3"),
    Fault("patients-in-both-splits", patients_in_both_splits, "split-group-leak", "groups",
          "https://github.com/Lightning-Universe/lightning-Covid19/issues/11"),
    Fault("visits-of-one-person-in-both-splits", visits_of_one_person_in_both_splits,
          "split-group-leak", "person_id",
          "https://github.com/OHDSI/PatientLevelPrediction/issues/181"),
]
