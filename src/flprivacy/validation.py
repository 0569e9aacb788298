"""Checks at the library's public boundary, shared by every module.

Every check raises an error that names the argument, what was expected, what was received and
how to fix it (the developer guide's rule for bad input). Conversions that are unambiguous
(a NumPy array where a tensor is expected, a float32 vector for a float64 model) are done
instead of raising.

:class:`NonFiniteError` is raised when training or an attack meets NaN or ±inf: silently
carrying on would return a meaningless answer (a NaN model makes the model-based AIA pick the
first candidate for every sample, for instance).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

__all__ = [
    "NonFiniteError", "as_tensor", "check_choice", "check_finite", "check_int", "check_positive", "check_seed",
]


class NonFiniteError(FloatingPointError, ValueError):
    """NaN or ±inf in data, a model or an attack's state (a :class:`ValueError` too)."""


class DivergenceWarning(RuntimeWarning):
    """Training that is diverging without overflowing yet: FedAvg's global model has grown by
    many orders of magnitude (:data:`DIVERGENCE_FACTOR`), which finite-precision arithmetic
    will not report until it overflows. Turn it into an error with
    ``warnings.simplefilter("error", DivergenceWarning)``."""


DIVERGENCE_FACTOR = 1e8
"""‖θ^t‖ above this many times max(‖θ^0‖, 1) is reported as divergence by :class:`DivergenceWarning`."""


def _where(where: str) -> str:
    return f"{where}: " if where else ""


def _describe(x: Any) -> str:
    if isinstance(x, Tensor):
        return f"a {x.dtype} tensor of shape {tuple(x.shape)}"
    if isinstance(x, np.ndarray):
        return f"a NumPy {x.dtype} array of shape {x.shape}"
    return f"{type(x).__name__} {x!r}" if not isinstance(x, (list, tuple)) else f"a {type(x).__name__} of length {len(x)}"


def as_tensor(name: str, x: Any, *, where: str = "", dtype: torch.dtype | None = None, ndim: int | Sequence[int] | None = None,
              rows: int | None = None, min_rows: int | None = None, floating: bool = False) -> Tensor:
    """``x`` as a tensor: tensors pass through, NumPy arrays and nested lists of numbers are
    converted; anything else raises :class:`TypeError`.

    Args:
        name, where: the argument and the function, for messages.
        dtype: convert to this dtype (e.g. the model's parameter dtype).
        ndim: required number of dimensions (or the allowed ones).
        rows: required size of the first dimension; ``min_rows``: its minimum.
        floating: require (after conversion) a floating-point dtype.
    """
    if not isinstance(x, Tensor):
        if isinstance(x, (np.ndarray, list, tuple, numbers.Number)) and not isinstance(x, bool):
            try:
                x = torch.as_tensor(np.asarray(x))
            except (TypeError, ValueError) as e:
                raise TypeError(f"{_where(where)}{name} must be a tensor (or an array of numbers); got {_describe(x)} "
                                f"that cannot be converted ({e}).") from None
        else:
            raise TypeError(f"{_where(where)}{name} must be a torch.Tensor; got {_describe(x)}. "
                            f"Pass torch.as_tensor({name}).")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if x.ndim not in allowed:
            raise ValueError(f"{_where(where)}{name} must have {' or '.join(map(str, allowed))} dimensions; got "
                             f"{_describe(x)}. Reshape it (e.g. {name}.reshape(-1) for a flat vector).")
    if rows is not None and (x.ndim == 0 or x.shape[0] != rows):
        raise ValueError(f"{_where(where)}{name} must have {rows} rows; got {_describe(x)}.")
    if min_rows is not None and (x.ndim == 0 or x.shape[0] < min_rows):
        raise ValueError(f"{_where(where)}{name} needs at least {min_rows} row(s); got {_describe(x)}.")
    if dtype is not None and x.dtype != dtype:
        if x.dtype.is_complex or (dtype.is_floating_point and x.dtype == torch.bool):
            raise TypeError(f"{_where(where)}{name} must be {dtype}; got {_describe(x)}.")
        x = x.to(dtype)
    if floating and not x.dtype.is_floating_point:
        x = x.to(torch.get_default_dtype())
    return x


def check_finite(name: str, x: Tensor, where: str = "", cause: str = "") -> Tensor:
    """Raise :class:`NonFiniteError` if ``x`` holds NaN or ±inf; returns ``x``."""
    if isinstance(x, Tensor) and (x.dtype.is_floating_point or x.dtype.is_complex):
        finite = torch.isfinite(x.detach())
        if not bool(finite.all()):
            bad = int((~finite).sum())
            raise NonFiniteError(
                f"{_where(where)}{name} holds {bad} non-finite value(s) (NaN or inf) out of {x.numel()}"
                f"{'; ' + cause if cause else ''}. Remove or impute them before calling.")
    return x


def check_positive(name: str, value: Any, where: str = "", *, strict: bool = True, allow_none: bool = False,
                   maximum: float | None = None) -> Any:
    """``value`` must be a finite real number > 0 (``strict``) or >= 0 (and <= ``maximum``)."""
    if value is None and allow_none:
        return value
    if isinstance(value, Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{_where(where)}{name} must be a real number; got {_describe(value)}.")
    v = float(value)
    ok = math.isfinite(v) and (v > 0 if strict else v >= 0) and (maximum is None or v <= maximum)
    if not ok:
        rng = f"{name} {'> 0' if strict else '>= 0'}{f' and {name} <= {maximum}' if maximum is not None else ''}"
        raise ValueError(f"{_where(where)}{name} must be finite with {rng}; got {value!r}. Pass e.g. {name}=1.0"
                         f"{'' if maximum is None else f' (at most {maximum})'}.")
    return value


def check_int(name: str, value: Any, where: str = "", *, minimum: int | None = 0, allow_none: bool = False) -> Any:
    """``value`` must be an integer (not a bool) >= ``minimum``; returns it as ``int``."""
    if value is None and allow_none:
        return value
    if isinstance(value, Tensor) and value.numel() == 1 and not value.dtype.is_floating_point:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{_where(where)}{name} must be an integer; got {_describe(value)}.")
    if minimum is not None and value < minimum:
        raise ValueError(f"{_where(where)}{name} must be an integer >= {minimum}; got {value}.")
    return int(value)


def check_seed(name: str, value: Any, where: str = "") -> int:
    """A seed: a non-negative integer (what NumPy's and torch's generators accept)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{_where(where)}{name} must be a non-negative integer seed; got {value!r}. "
                         f"Derive seeds with flprivacy.child_seed(SEED, k).")
    return int(value)


def check_choice(name: str, value: Any, choices: Sequence[Any], where: str = "") -> Any:
    """``value`` must be one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{_where(where)}{name} must be one of {list(choices)}; got {value!r}.")
    return value
