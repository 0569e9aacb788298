"""The checks at the library's public boundary (flprivacy.validation), each at its edge: what it
must refuse, what it must take, and that the message names the argument and the function.

`test_bad_inputs.py` drives every public callable with bad input; these tests pin the shared
checks themselves, so that a check loosened or tightened by one comparison breaks a test
(`tests/mutants/validation.py`).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from flprivacy.validation import (NonFiniteError, as_tensor, check_choice, check_finite, check_int, check_positive,
                                  check_seed)


def test_as_tensor_converts_arrays_and_refuses_what_is_not_numbers():
    x = as_tensor("X", np.arange(6.0).reshape(2, 3), where="f")
    assert isinstance(x, torch.Tensor) and x.shape == (2, 3) and x.dtype == torch.float64
    assert as_tensor("y", [1, 2, 3], where="f").tolist() == [1, 2, 3]
    with pytest.raises(TypeError, match=r"f: X must be a torch.Tensor; got bool True"):
        as_tensor("X", True, where="f")
    with pytest.raises(TypeError, match=r"f: X must be a torch.Tensor; got str"):
        as_tensor("X", "data.csv", where="f")
    with pytest.raises(TypeError, match=r"f: X must be a tensor \(or an array of numbers\)"):
        as_tensor("X", [[1, 2], [3]], where="f")


def test_as_tensor_shape_checks_at_their_edges():
    x = torch.zeros(4, 2)
    assert as_tensor("X", x, ndim=2, rows=4, min_rows=4) is x  # the bounds themselves pass
    assert as_tensor("X", x, ndim=(1, 2)) is x
    with pytest.raises(ValueError, match=r"g: X must have 1 dimensions; got a torch.float32 tensor of shape \(4, 2\)"):
        as_tensor("X", x, where="g", ndim=1)
    with pytest.raises(ValueError, match=r"X must have 3 rows"):
        as_tensor("X", x, rows=3)  # more rows than required is wrong too: exactly `rows`
    with pytest.raises(ValueError, match=r"X must have 5 rows"):
        as_tensor("X", x, rows=5)
    with pytest.raises(ValueError, match=r"X needs at least 5 row\(s\)"):
        as_tensor("X", x, min_rows=5)
    with pytest.raises(ValueError, match=r"needs at least 1 row"):
        as_tensor("X", torch.tensor(1.0), min_rows=1)  # a scalar has no rows


def test_as_tensor_dtypes():
    x32 = torch.ones(3, dtype=torch.float32)
    assert as_tensor("theta", x32, dtype=torch.float64).dtype == torch.float64
    assert as_tensor("y", torch.tensor([1, 0, 2]), dtype=torch.float64).tolist() == [1.0, 0.0, 2.0]
    with pytest.raises(TypeError, match=r"h: mask must be torch.float64; got a torch.bool tensor"):
        as_tensor("mask", torch.tensor([True, False]), where="h", dtype=torch.float64)
    with pytest.raises(TypeError, match=r"must be torch.float64; got a torch.complex64"):
        as_tensor("z", torch.ones(2, dtype=torch.complex64), dtype=torch.float64)
    images = as_tensor("x", torch.tensor([[0, 255]], dtype=torch.uint8), floating=True)
    assert images.dtype == torch.get_default_dtype() and images.tolist() == [[0.0, 255.0]]
    assert as_tensor("x", torch.ones(1, dtype=torch.float64), floating=True).dtype == torch.float64  # kept


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_check_finite_refuses_nan_and_both_infinities(bad, dtype):
    x = torch.tensor([0.0, bad, 1.0], dtype=dtype)
    with pytest.raises(NonFiniteError, match=r"k: theta holds 1 non-finite value\(s\) \(NaN or inf\) out of 3; diverged"):
        check_finite("theta", x, "k", "diverged")
    assert isinstance(NonFiniteError("x"), ValueError)  # callers that catch ValueError catch it too


def test_check_finite_passes_finite_and_integer_tensors():
    x = torch.tensor([0.0, -1e300, 1e300], dtype=torch.float64)
    assert check_finite("x", x) is x
    i = torch.tensor([1, 2, 3])
    assert check_finite("i", i) is i


def test_check_positive_at_its_edges():
    assert check_positive("lr", 1) == 1 and check_positive("lr", 1e-300) == 1e-300
    assert check_positive("lr", torch.tensor(0.5)) == 0.5
    assert check_positive("wd", 0.0, strict=False) == 0.0  # non-strict admits 0
    assert check_positive("f", 1.0, maximum=1.0) == 1.0  # the maximum itself
    assert check_positive("lr", None, allow_none=True) is None
    for bad in (0, 0.0, -1e-12, float("inf"), float("nan")):
        with pytest.raises(ValueError, match=r"m: lr must be finite with lr > 0; got"):
            check_positive("lr", bad, "m")
    for bad in (-1e-12, float("inf")):
        with pytest.raises(ValueError, match=r"wd must be finite with wd >= 0"):
            check_positive("wd", bad, strict=False)
    with pytest.raises(ValueError, match=r"f must be finite with f > 0 and f <= 1.0; got 1.0000001"):
        check_positive("f", 1.0000001, maximum=1.0)
    for bad in (True, "0.1", None, [0.1]):
        with pytest.raises(TypeError, match=r"lr must be a real number"):
            check_positive("lr", bad)


def test_check_int_at_its_edges():
    assert check_int("rounds", 0) == 0 and check_int("rounds", 5, minimum=5) == 5
    assert check_int("rounds", np.int64(3)) == 3 and type(check_int("rounds", np.int64(3))) is int
    assert check_int("rounds", torch.tensor(4)) == 4
    assert check_int("rounds", -3, minimum=None) == -3
    assert check_int("rounds", None, allow_none=True) is None
    with pytest.raises(ValueError, match=r"n: rounds must be an integer >= 5; got 4"):
        check_int("rounds", 4, "n", minimum=5)
    for bad in (2.5, 3.0, True, "3", torch.tensor(2.0)):
        with pytest.raises(TypeError, match=r"rounds must be an integer"):
            check_int("rounds", bad)


def test_check_seed():
    assert check_seed("seed", 0) == 0 and check_seed("seed", np.int64(7)) == 7
    for bad in (-1, 0.5, 1.0, True, "0", None):
        with pytest.raises(ValueError, match=r"s: seed must be a non-negative integer seed; got .*child_seed"):
            check_seed("seed", bad, "s")


def test_check_choice_names_the_choices():
    assert check_choice("loss", "mse", ("mse", "bce")) == "mse"
    with pytest.raises(ValueError, match=r"c: loss must be one of \['mse', 'bce'\]; got 'MSE'"):
        check_choice("loss", "MSE", ("mse", "bce"), "c")
