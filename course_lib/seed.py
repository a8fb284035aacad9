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
    torch.manual_seed(seed)  # also seeds every CUDA device
    return torch.Generator().manual_seed(seed)
