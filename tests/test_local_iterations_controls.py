"""The controlled design of flbook.experiments.local_iterations_controls (Wilson et al. App. F)."""

from __future__ import annotations

from flbook.experiments import local_iterations_controls as L


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


def test_app_f_controls_gap_is_upper_minus_super_at_tau_8():
    """flbook.ledger.wilson.app_f_controls on a made-up record: means over seeds at τ = 8 only, the
    gap is the upper bound's SSIM minus the super-client's, and fixed_N borrows fixed_B's K = 2."""
    from flbook.ledger import wilson as W

    def case(design, K, N, tau, variant, seed, ssim, err):
        return dict(design=design, K=K, N=N, tau=tau, variant=variant, seed=seed, ssim=ssim, replay_error=err)

    cases = []
    for seed, shift in ((0, 0.0), (1, 0.02)):
        cases += [case("fixed_B", 2, 16, 8, "super", seed, 0.30 + shift, 0.1), case("fixed_B", 2, 16, 8, "upper", seed, 0.40 + shift, 0.0),
                  case("fixed_B", 2, 16, 1, "super", seed, 0.90, 0.0),  # τ = 1: ignored
                  case("fixed_B", 4, 32, 8, "super", seed, 0.20, 0.2), case("fixed_B", 4, 32, 8, "upper", seed, 0.25, 0.0),
                  case("fixed_N", 4, 16, 8, "super", seed, 0.10 + shift, 0.3), case("fixed_N", 4, 16, 8, "upper", seed, 0.45, 0.0)]
    rec = {"data": {"designs": {"fixed_B": {}, "fixed_N": {}}, "cases": cases}}
    got = W.app_f_controls(rec)
    assert abs(got["fixed_B"][2]["gap"] - 0.10) < 1e-12 and abs(got["fixed_B"][2]["SSIM, super-client"] - 0.31) < 1e-12
    assert abs(got["fixed_B"][4]["gap"] - 0.05) < 1e-12 and got["fixed_B"][4]["(K-1)/N"] == 3 / 32
    assert got["fixed_N"][2] == got["fixed_B"][2]
    assert abs(got["fixed_N"][4]["gap"] - (0.45 - 0.11)) < 1e-12 and abs(got["fixed_N"][4]["replay error, super-client"] - 0.3) < 1e-12
    v = W.app_f_control_verdicts(rec)
    assert v["fixed_B"][0].status == "not reproduced" and v["fixed_N"][0].status == "reproduced"
    assert v["fixed_B"][1].ok and v["fixed_N"][1].ok
