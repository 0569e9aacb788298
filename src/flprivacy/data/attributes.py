"""Where a sensitive attribute sits in a design matrix, and the values it can take.

A description of data columns, used by the data loaders (:mod:`flprivacy.data.census` names the
attribute of each task) and by the attribute-inference attacks of Diana et al. 2025
(:mod:`flprivacy.attacks.model_based_aia`, :mod:`flprivacy.attacks.gradient_aia`), which enumerate its candidate values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class SensitiveAttribute:
    """Where the sensitive attribute sits in the design matrix and the values it can take.

    Args:
        columns: the column(s) of ``X`` holding it: one for a binary attribute, the one-hot
            group for a categorical one.
        candidates: ``(C, len(columns))``, one row per value the attribute can take (its
            encoding in those columns), e.g. ``[[0.], [1.]]``.
        name: for messages and tables.
    """

    columns: tuple[int, ...]
    candidates: Tensor
    name: str = ""

    def __post_init__(self) -> None:
        cols = tuple(int(c) for c in self.columns)
        cand = torch.as_tensor(self.candidates, dtype=torch.float64)
        if cand.ndim != 2 or cand.shape[1] != len(cols) or cand.shape[0] < 2:
            raise ValueError(
                f"candidates must have shape (C >= 2, {len(cols)}): one row per value of the attribute, one column "
                f"per sensitive column; got {tuple(cand.shape)}."
            )
        object.__setattr__(self, "columns", cols)
        object.__setattr__(self, "candidates", cand)

    @classmethod
    def binary(cls, column: int, values: tuple[float, float] = (0.0, 1.0), name: str = "") -> SensitiveAttribute:
        """A binary attribute in one column taking ``values`` (index 0 and 1)."""
        return cls((int(column),), torch.tensor([[float(values[0])], [float(values[1])]]), name)

    @classmethod
    def one_hot(cls, columns: Sequence[int], name: str = "") -> SensitiveAttribute:
        """A categorical attribute one-hot encoded in ``columns`` (candidate k = k-th unit vector)."""
        return cls(tuple(int(c) for c in columns), torch.eye(len(columns)), name)

    @property
    def n_values(self) -> int:
        """Number of candidate values C."""
        return int(self.candidates.shape[0])

    def check(self, X: Tensor) -> None:
        if X.ndim != 2:
            raise ValueError(f"X must be a (n, p) design matrix, got shape {tuple(X.shape)}.")
        if max(self.columns) >= X.shape[1] or min(self.columns) < 0:
            raise ValueError(f"sensitive columns {list(self.columns)} out of range for X with {X.shape[1]} columns.")

    def true_index(self, X: Tensor, atol: float = 1e-6) -> Tensor:
        """The index of the candidate each row of ``X`` holds (the ground truth, for scoring)."""
        self.check(X)
        vals = X[:, list(self.columns)].to(torch.float64)
        match = (vals.unsqueeze(1) - self.candidates.unsqueeze(0)).abs().amax(-1) <= atol  # (n, C)
        if not bool(match.any(1).all()):
            bad = int((~match.any(1)).nonzero()[0])
            raise ValueError(
                f"row {bad} holds {vals[bad].tolist()} in the sensitive columns, which is none of the candidates "
                f"{self.candidates.tolist()}; check the columns and candidates of the attribute."
            )
        return match.to(torch.int8).argmax(1)

    def fill(self, X: Tensor, index: Tensor) -> Tensor:
        """A copy of ``X`` whose attribute is set to ``candidates[index]`` row by row."""
        out = X.clone()
        out[:, list(self.columns)] = self.candidates.to(X.dtype)[index]
        return out

    def expand(self, X: Tensor) -> Tensor:
        """``(C*n, p)``: ``X`` with the attribute set to each candidate in turn (candidate-major:
        row ``c*n + i`` is sample i with value c)."""
        self.check(X)
        C, n = self.n_values, X.shape[0]
        Xc = X.unsqueeze(0).repeat(C, 1, 1)
        Xc[:, :, list(self.columns)] = self.candidates.to(X.dtype).unsqueeze(1)
        return Xc.reshape(C * n, X.shape[1])
