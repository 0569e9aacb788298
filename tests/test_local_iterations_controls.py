"""The controlled design of flprivacy.experiments.local_iterations_controls (Wilson et al. App. F)."""

from __future__ import annotations

from flprivacy.experiments import local_iterations_controls as L


def test_designs_fix_images_per_client_or_the_total():
    cases = L.cases([11, 12])
    assert len(cases) == (3 + 2) * 2 * len(L.RUNS)  # K = 2 of fixed_N is fixed_B's federation, run once
    for design, c in cases:
        assert c.fl_lr == 0.03 and c.group == "local_iterations"
        assert (c.N == 16) if design == "fixed_N" else (c.N == 8 * c.K)
        assert len(set(c.sizes)) == 1
    fixed_n = {c.K for d, c in cases if d == "fixed_N"}
    assert fixed_n == {4, 8}
    # Lemma 1's factor (K-1)/N from K = 2 to K = 8: x1.75 at 8 images per client, x7 with N fixed
    factor = {d: {c.K: (c.K - 1) / c.N for dd, c in cases if dd in (d, "fixed_B") and (dd == d or c.K == 2)}
              for d in L.DESIGNS}
    assert factor["fixed_B"][8] / factor["fixed_B"][2] == 1.75 and factor["fixed_N"][8] / factor["fixed_N"][2] == 7
    assert {(d, c.variant, c.tau) for d, c in cases if c.K == 8} >= {("fixed_B", "upper", 8), ("fixed_N", "super", 1)}


def test_seeds_start_with_the_factor_chapters_live_seeds():
    from flprivacy import base_seed, child_seed

    assert L.seeds(3)[:2] == [child_seed(base_seed(), 4, s) for s in range(2)]
