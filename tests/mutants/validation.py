"""Plausible bugs in the checks at the library's public boundary (flprivacy.validation): a check
that lets through what it should refuse (NaN, ±inf, a bool, a float where an integer is needed, a
negative seed, a value on the wrong side of its bound) or refuses what it should take (a NumPy
array, an integer learning rate, the bound itself).

Run in a private clone (it edits files in place):

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/validation.py
"""

from tools.mutation import Mutant, pytest_command

VAL = "src/flprivacy/validation.py"

TESTS = pytest_command("tests/test_bad_inputs.py", "tests/test_reliability.py", "tests/test_metrics.py",
                       "tests/test_validation.py", "-k", "not slow")

MUTANTS = [
    Mutant("as_tensor_takes_bool", VAL,
           "        if isinstance(x, (np.ndarray, list, tuple, numbers.Number)) and not isinstance(x, bool):\n",
           "        if isinstance(x, (np.ndarray, list, tuple, numbers.Number)):\n",
           "True is not an array of numbers: a flag passed where data is expected"),
    Mutant("as_tensor_refuses_numpy", VAL,
           "        if isinstance(x, (np.ndarray, list, tuple, numbers.Number)) and not isinstance(x, bool):\n",
           "        if isinstance(x, (list, tuple, numbers.Number)) and not isinstance(x, bool):\n",
           "a NumPy array is converted, not refused (the module's promise)"),
    Mutant("as_tensor_no_ndim", VAL, "        if x.ndim not in allowed:\n", "        if False:\n",
           "a matrix where a vector is expected must raise"),
    Mutant("as_tensor_rows_at_least", VAL, "    if rows is not None and (x.ndim == 0 or x.shape[0] != rows):\n",
           "    if rows is not None and (x.ndim == 0 or x.shape[0] < rows):\n", "exactly `rows` rows, not at least"),
    Mutant("as_tensor_min_rows_strict", VAL, "    if min_rows is not None and (x.ndim == 0 or x.shape[0] < min_rows):\n",
           "    if min_rows is not None and (x.ndim == 0 or x.shape[0] <= min_rows):\n", "min_rows rows are enough"),
    Mutant("as_tensor_no_dtype", VAL, "        x = x.to(dtype)\n    if floating", "        pass\n    if floating",
           "a float32 vector for a float64 model is converted"),
    Mutant("as_tensor_bool_to_float", VAL, "        if x.dtype.is_complex or (dtype.is_floating_point and x.dtype == torch.bool):\n",
           "        if x.dtype.is_complex:\n", "a boolean mask where numbers are expected must raise"),
    Mutant("as_tensor_floating_ignored", VAL, "        x = x.to(torch.get_default_dtype())\n", "        pass\n",
           "floating=True converts integer images"),
    Mutant("finite_only_nan", VAL, "        finite = torch.isfinite(x.detach())\n", "        finite = ~torch.isnan(x.detach())\n",
           "±inf is as broken as NaN"),
    Mutant("finite_skips_float32", VAL, "    if isinstance(x, Tensor) and (x.dtype.is_floating_point or x.dtype.is_complex):\n",
           "    if isinstance(x, Tensor) and x.dtype == torch.float64:\n", "float32 tensors are checked too"),
    Mutant("positive_allows_inf", VAL, "    ok = math.isfinite(v) and (v > 0 if strict else v >= 0)",
           "    ok = not math.isnan(v) and (v > 0 if strict else v >= 0)", "lr = inf accepted"),
    Mutant("positive_allows_zero", VAL, "(v > 0 if strict else v >= 0)", "(v >= 0 if strict else v >= 0)",
           "strict means > 0: a zero learning rate never moves"),
    Mutant("nonnegative_refuses_zero", VAL, "(v > 0 if strict else v >= 0)", "(v > 0 if strict else v > 0)",
           "strict=False admits 0 (e.g. no weight decay)"),
    Mutant("positive_maximum_strict", VAL, "(maximum is None or v <= maximum)", "(maximum is None or v < maximum)",
           "the maximum itself is allowed (e.g. a fraction of 1)"),
    Mutant("positive_takes_bool", VAL, "    if isinstance(value, bool) or not isinstance(value, numbers.Real):\n        raise TypeError(f\"{_where(where)}{name} must be a real",
           "    if not isinstance(value, numbers.Real):\n        raise TypeError(f\"{_where(where)}{name} must be a real",
           "True is not a learning rate"),
    Mutant("int_takes_float", VAL, "    if isinstance(value, bool) or not isinstance(value, numbers.Integral):\n        raise TypeError(f\"{_where(where)}{name} must be an integer",
           "    if isinstance(value, bool) or not isinstance(value, numbers.Real):\n        raise TypeError(f\"{_where(where)}{name} must be an integer",
           "2.5 rounds is not a number of rounds"),
    Mutant("int_minimum_strict", VAL, "    if minimum is not None and value < minimum:\n",
           "    if minimum is not None and value <= minimum:\n", "the minimum itself is allowed"),
    Mutant("seed_takes_float", VAL, "    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:",
           "    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value < 0:",
           "a seed of 0.5 is not a seed"),
    Mutant("choice_unchecked", VAL, "    if value not in choices:\n", "    if False:\n", "an unknown name raises"),
    Mutant("divergence_factor_huge", VAL, "DIVERGENCE_FACTOR = 1e8\n", "DIVERGENCE_FACTOR = 1e300\n",
           "a model grown 1e8-fold is reported as diverging"),
]
