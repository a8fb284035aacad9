"""The course's small real dataset and its DataLoader helpers (chapters 03+).

The data is the UCI "Optical Recognition of Handwritten Digits" test set: 1797 images of the
digits 0-9, 8x8 pixels with values 0..16 (E. Alpaydin and C. Kaynak, 1998; UCI Machine
Learning Repository, CC BY 4.0). The file ``course_lib/assets/digits.csv.gz`` is the copy
scikit-learn ships for ``load_digits`` (see ``course_lib/assets/README.md``); the course reads
it itself, offline, without scikit-learn. Chapter 03 introduces it; 04-07 reuse it.
"""

import gzip
from functools import lru_cache
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset

from .i18n.plots import plot_text

DIGITS_FILE = Path(__file__).with_name("assets") / "digits.csv.gz"
DIGITS_SHA256 = "09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22"
N_FEATURES = 64  # 8 x 8 pixels, flattened
N_CLASSES = 10
MAX_PIXEL = 16


@lru_cache(maxsize=1)
def _read_digits(path: Path = DIGITS_FILE):
    """The raw table: pixels (int64, N x 64) and labels (int64, N) (chapters 03+)."""
    with gzip.open(path, "rt") as f:
        rows = [[int(v) for v in line.split(",")] for line in f if line.strip()]
    table = torch.tensor(rows, dtype=torch.int64)
    return table[:, :-1], table[:, -1]


def load_digits():
    """All 1797 digits: pixels as float32 in [0, 1],
    shape (1797, 64), and int64 labels (chapters 03+)."""
    pixels, labels = _read_digits()
    return pixels.float() / MAX_PIXEL, labels.clone()


class DigitsDataset(Dataset):
    """A map-style Dataset: ``len(ds)`` and ``ds[i] ->
    (x, y)``, x float32 (64,), y int64 (chapters 03+).

    The seed's ``MyDataset(...)`` made concrete: a Dataset only says how many samples there
    are and how to fetch one; the DataLoader batches, shuffles and (optionally) uses workers.
    """

    def __init__(self, images: torch.Tensor, labels: torch.Tensor):
        if len(images) != len(labels):
            raise ValueError(f"{len(images)} images but {len(labels)} labels")
        self.images, self.labels = images, labels

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index):
        return self.images[index], self.labels[index]


def digits_split(test_fraction: float = 0.2, seed: int = 0):
    """A fixed shuffled split of the digits into (train, test) DigitsDatasets (chapters 03+)."""
    if not 0 < test_fraction < 1:
        raise ValueError("test_fraction must be between 0 and 1")
    images, labels = load_digits()
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))
    n_test = round(len(labels) * test_fraction)
    test, train = order[:n_test], order[n_test:]
    return DigitsDataset(images[train], labels[train]), DigitsDataset(images[test], labels[test])


def pin_memory_for(device) -> bool:
    """Pin (page-lock) host memory only when batches go to a CUDA GPU (chapters 03, 05).

    On a CPU-only machine pinning buys nothing and PyTorch warns that it is ignored.
    """
    return torch.device(device).type == "cuda"


def make_loader(
    dataset,
    device,
    batch_size: int = 64,
    shuffle: bool = False,
    num_workers: int = 0,
    seed: int = 0,
    **options,
) -> DataLoader:
    """A DataLoader for training on `device` (chapters 03+).

    ``pin_memory`` follows the device (CUDA only); a shuffled loader gets its own seeded
    generator, so the batch order repeats from run to run. ``num_workers`` > 0 prepares
    batches in worker processes (chapter 05 measures when that pays).
    """
    generator = torch.Generator().manual_seed(seed) if shuffle else None
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=shuffle,
        num_workers=num_workers,
        pin_memory=pin_memory_for(device),
        generator=generator,
        **options,
    )


def show_digits(dataset, n: int = 12, title: str = ""):
    """A row of `n` digits with their labels, as a matplotlib Figure (chapters 03+).

    One image of the digits side by side (a column of blank pixels between them) on one axes, a
    label above each: one axes draws in a fraction of the time of one axes per digit.
    """
    import matplotlib.pyplot as plt

    n = min(n, len(dataset))
    samples = [dataset[i] for i in range(n)]
    strip = torch.zeros(8, 9 * n - 1)  # 0 draws white, as a digit's background does
    for i, (x, _) in enumerate(samples):
        strip[:, 9 * i : 9 * i + 8] = x.detach().reshape(8, 8).cpu()
    fig, ax = plt.subplots(figsize=(1.1 * n, 1.5))
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.02, top=0.8)  # fixed: no layout engine
    ax.imshow(strip.numpy(), cmap="gray_r", vmin=0, vmax=1)
    for i, (_, y) in enumerate(samples):
        ax.text(9 * i + 3.5, -1, str(int(y)), ha="center", va="bottom", fontsize="large")
    ax.set_ylim(7.5, -2.8)  # room above the digits for their labels
    ax.axis("off")
    if title:
        fig.suptitle(plot_text(title))
    plt.close(fig)  # returned, so it is shown once (as the cell's value), not twice
    return fig
