"""``set_seed`` and ``environment``: make a run repeatable and say what it ran on.

``set_seed`` imports torch when it is installed (a seed must reach it even when the
caller imports torch later); ``environment`` reads versions from the installed packages'
metadata and asks torch about devices only when it is already imported.
"""

from __future__ import annotations

import os
import platform
import random
import sys
from typing import Any

from .errors import VizdebugError

_LAST: dict[str, Any] = {}  # what the last set_seed() set, recorded with each stored run

_PACKAGES = ("numpy", "torch", "pandas", "scipy", "sklearn", "vizdebug", "lightning",
             "pytorch_lightning", "transformers", "umap", "plotly", "anywidget")


def set_seed(seed: int, deterministic: bool = True) -> dict[str, Any]:
    """Seed Python's, numpy's and torch's generators (every CUDA device too) and, with
    ``deterministic=True``, ask torch for deterministic kernels.

    Returns what was set, to log with the run. Deterministic mode sets
    ``torch.use_deterministic_algorithms(True, warn_only=True)`` (an op without a
    deterministic kernel warns rather than fails), turns cuDNN's benchmark off and sets
    ``CUBLAS_WORKSPACE_CONFIG`` when it is unset. DataLoader workers still need a seeded
    ``generator=`` (and a ``worker_init_fn`` for their own numpy use).

    Examples
    --------
    >>> set_seed(0, deterministic=False)["seed"]
    0
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise VizdebugError(f"set_seed takes an integer in [0, 2**32), got {seed!r}")
    random.seed(seed)
    done: dict[str, Any] = {"seed": seed, "deterministic": deterministic, "seeded": ["random"]}
    _LAST.clear()
    _LAST.update(done)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed)
        done["seeded"].append("numpy")
    try:
        import torch
    except ImportError:
        return done
    torch.manual_seed(seed)  # also every CUDA device
    done["seeded"].append("torch")
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
    return done


def last_seed() -> dict[str, Any] | None:
    """What the last :func:`set_seed` call of this process set (``None``: never called)."""
    return dict(_LAST, seeded=list(_LAST["seeded"])) if _LAST else None


def environment() -> dict[str, Any]:
    """Versions and hardware a run depends on: Python, the platform, numpy/torch/...
    (those installed and already imported, or cheap to ask), CUDA and the GPUs.

    Examples
    --------
    >>> env = environment()
    >>> env["python"].count(".")
    2
    """
    env: dict[str, Any] = {
        "python": platform.python_version(), "platform": platform.platform(),
        "machine": platform.machine(), "packages": _versions(), "cuda": None, "gpus": [],
    }
    torch = sys.modules.get("torch")
    if torch is not None:
        env["cuda"] = torch.version.cuda
        env["cudnn"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        if torch.cuda.is_available():
            env["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        env["threads"] = torch.get_num_threads()
    return env


def _versions() -> dict[str, str]:
    from importlib import metadata

    names = {"sklearn": "scikit-learn", "umap": "umap-learn"}
    out = {}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(names.get(name, name))
        except metadata.PackageNotFoundError:
            continue
    return out
