"""What the ledger's Wilson et al. modules share (:mod:`flbook.ledger.wilson` and its parts
:mod:`.wilson_architectures`, :mod:`.wilson_fedinverse`, :mod:`.wilson_rog`): the chapters their
rows point to and the level a reconstruction must beat."""

from __future__ import annotations

CH_CLIENT = "part4/curious_client"
CH_FACTORS = "part4/curious_client_factors"
CH_DIFFUSION = "part4/diffusion_postprocessing"


def mean_digit_ssim(n: int = 200) -> float:
    """SSIM of the best image-independent guess, the mean MNIST test digit, against the first ``n``
    test digits: the level a reconstruction must beat to carry information about its image (the
    curious-client chapter's check)."""
    from flprivacy.data import load_mnist
    from flprivacy.metrics import ssim

    X, _ = load_mnist("test")
    return float(ssim(X.mean(0, keepdim=True).expand(n, -1, -1, -1), X[:n]).mean())
