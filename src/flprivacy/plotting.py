"""The book's figure style and a few figure helpers."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import seaborn as sns
from torch import Tensor


def set_style() -> None:
    """Apply the book's matplotlib/seaborn style (call once per notebook)."""
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    plt.rcParams.update({"figure.dpi": 110, "figure.figsize": (6.4, 3.8), "axes.titleweight": "bold",
                         "savefig.bbox": "tight"})


def image_grid(rows: Sequence[Tensor], row_labels: Sequence[str] | None = None,
               col_titles: Sequence[str] | None = None, scale: float = 1.2):
    """Show rows of images side by side (e.g. ground truth above reconstructions).

    Args:
        rows: each a tensor ``(n, C, H, W)`` with values in [0, 1] (clipped); all rows show
            the same number of images.
        row_labels: a label per row, shown on the left.
        col_titles: a title per column.
    Returns:
        The matplotlib figure.
    """
    n = rows[0].shape[0]
    if any(r.shape[0] != n for r in rows):
        raise ValueError(f"every row needs the same number of images; got {[r.shape[0] for r in rows]}.")
    fig, axes = plt.subplots(len(rows), n, figsize=(scale * n, scale * len(rows)), squeeze=False)
    for i, r in enumerate(rows):
        for j in range(n):
            img = r[j].detach().float().clamp(0, 1).cpu()
            ax = axes[i, j]
            if img.shape[0] == 1:
                ax.imshow(img[0], cmap="gray", vmin=0, vmax=1)
            else:
                ax.imshow(img.permute(1, 2, 0))
            ax.set_xticks([]), ax.set_yticks([])
            ax.grid(False)
            if row_labels is not None and j == 0:
                ax.set_ylabel(row_labels[i], rotation=0, ha="right", va="center")
            if col_titles is not None and i == 0:
                ax.set_title(col_titles[j], fontsize=8)
    fig.tight_layout()
    return fig
