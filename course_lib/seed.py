"""Seeding in one place (used by every chapter that trains)."""

import random

import torch


def seed_everything(seed: int = 0) -> torch.Generator:
    """Seed Python, NumPy (if installed) and torch on every device; return a torch Generator."""
    random.seed(seed)
    try:
        import numpy as np

        np.random.seed(seed)
    except ImportError:
        pass
    manual_seed(seed)  # also seeds every CUDA device
    return torch.Generator().manual_seed(seed)


def manual_seed(seed: int) -> torch.Generator:
    """torch.manual_seed(seed), without queuing seeds for accelerators this machine lacks: torch
    records a stack trace with each queued seed (~0.3 ms), and a check seeds dozens of times."""
    if torch.accelerator.is_available():
        return torch.manual_seed(seed)
    return torch.random.default_generator.manual_seed(int(seed))
