"""Plausible bugs in the LEAF reference generator's reproduction (``leaf_synthetic(labels="leaf-reference")``),
caught by the fixture of LEAF's own output.

Run from the repository root (in a private clone):

    PYTHONPATH=$PWD:$PWD/src python tools/mutation.py tests/mutants/leaf_reference.py

Each mutant breaks one step; ``why`` names it.
"""

from tools.mutation import Mutant, pytest_command

SYN = "src/flprivacy/data/synthetic.py"

TESTS = pytest_command("tests/test_leaf_reference.py")

MUTANTS = [
    Mutant("softmax_over_classes", SYN, "prob_rows = e / sum(e)", "prob_rows = e / e.sum(1, keepdims=True)",
           "the first generator's softmax normalised over the classes (the later fix) instead of over the samples"),
    Mutant("model_info_scale", SYN, "info = rs.normal(loc=means[j], scale=0.1,", "info = rs.normal(loc=means[j], scale=0.2,",
           "a client's model information drawn around its cluster mean with 0.2 instead of 0.1"),
    Mutant("noise_before_model", SYN,
           "        info = rs.normal(loc=means[j], scale=0.1, size=means[j].shape)\n        W = np.matmul(Q, info)\n        z = np.matmul(X1, W) + rs.normal(loc=0.0, scale=0.1, size=(n, n_classes))",
           "        noise = rs.normal(loc=0.0, scale=0.1, size=(n, n_classes))\n        info = rs.normal(loc=means[j], scale=0.1, size=means[j].shape)\n        W = np.matmul(Q, info)\n        z = np.matmul(X1, W) + noise",
           "the logit noise drawn before the model information: the stream's order differs from the generator's"),
    Mutant("sigma_exponent", SYN, "Sigma = np.diag(np.arange(1, n_features + 1, dtype=np.float64) ** -1.2)",
           "Sigma = np.diag(np.arange(1, n_features + 1, dtype=np.float64) ** -1.0)", "Σ = diag(i^-1.0) instead of LEAF's i^-1.2"),
]
