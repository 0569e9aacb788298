"""The rules that decide Wilson et al. 2025's rows outside ``ledger/wilson.py``, each at its edge, on
constructed records: Fig. 8 and App. G against ROG's GAN (``ledger/wilson_rog.py``), Fig. 9 against
FedInverse (``ledger/wilson_fedinverse.py``), and Fig. 5, App. H and eq. 3 over three models
(``ledger/wilson_architectures.py``), including which result file each row reads. The mutants they
catch are in ``tests/mutants/ledger_wilson.py``."""

from __future__ import annotations

import math

import pytest

from flbook.ledger import wilson_architectures as WA
from flbook.ledger import wilson_fedinverse as WF
from flbook.ledger import wilson_rog as WR

RAW = dict(ssim=0.4, psnr=12.0, lpips=0.3, recognised=0.7)


def _files(monkeypatch, module, paper=None, quick=None):
    """Make ``module.record_or_none`` return the constructed records (None: not committed)."""
    monkeypatch.setattr(module, "record_or_none", lambda name, scale_="paper": {"paper": paper, "quick": quick}[scale_])


# ---- Fig. 8 and App. G: direct post-processing (DDRM) vs ROG's GAN ------------------------------------------
def _rog_cases(spec, scale="quick"):
    """``spec``: ``[(K, ddrm, rog), ...]``, one case (one seed at one K) each; metrics not given are
    the raw images' scores."""
    cases = [dict(K=K, raw=RAW, ddrm={**RAW, **d}, rog={**RAW, **r}) for K, d, r in spec]
    return {"scale": scale, "data": {"cases": cases, "rog": {"steps": 100}}}


def _paper_like(**over):
    """Two seeds at K = 2 and 4: DDRM more recognisable, higher LPIPS, lower SSIM (within 0.02)."""
    d = {**dict(ssim=0.40, lpips=0.20, recognised=0.9), **over}
    r = dict(ssim=0.42, lpips=0.15, recognised=0.8)
    return [(K, {k: v + j for k, v in d.items()}, r) for K in (2, 4) for j in (0.0, 0.002)]


def test_noise_margin_is_two_standard_errors_of_the_mean():
    # differences 0, 0.1, 0.2: sample standard deviation 0.1 (n - 1 = 2), standard error 0.1/√3
    assert WR.noise_margin([0.0, 0.1, 0.2]) == pytest.approx(2 * 0.1 / math.sqrt(3))
    assert WR.noise_margin([0.3, 0.3, 0.3]) == 0.0 and WR.noise_margin([0.5]) == 0.0


def test_fig8_needs_each_of_its_three_parts():
    assert WR.fig8_verdict(_rog_cases(_paper_like())).status == "reproduced"
    for over, word in ((dict(recognised=0.7), "recognisability"), (dict(ssim=0.45), "SSIM"), (dict(lpips=0.10), "LPIPS")):
        v = WR.fig8_verdict(_rog_cases(_paper_like(**over)))
        assert v.status == "partly" and word in v.reason, (over, v)


def test_fig8_difference_within_the_seed_noise_does_not_count():
    # recognisability 0.9 vs 0.8 on average, but the seeds differ by 0.6: mean 0.1 < 2 SE ≈ 0.35 over the four cases
    spec = [(K, dict(ssim=0.40, lpips=0.20, recognised=r), dict(ssim=0.42, lpips=0.15, recognised=0.8))
            for K in (2, 4) for r in (0.6, 1.2)]
    v = WR.fig8_verdict(_rog_cases(spec))
    assert v.status == "partly" and "recognisability" in v.reason


def test_app_g_lpips_higher_at_every_k_on_that_k_s_seeds():
    # LPIPS DDRM - GAN: +0.3 at K = 2 and 4, 0 at K = 8; pooled over all six cases it clears its margin
    spec = [(K, dict(ssim=0.4, lpips=0.15 + gap), dict(ssim=0.4, lpips=0.15))
            for K, gap in ((2, 0.3), (4, 0.3), (8, 0.0)) for _ in range(2)]
    v = WR.app_g_verdict(_rog_cases(spec))
    assert v.status == "partly" and "K = 8" in v.reason and "K = 2" not in v.reason


@pytest.mark.parametrize("gap,ok", [(0.028, True), (-0.028, True), (0.032, False), (-0.032, False), (-0.2, False)])
def test_app_g_ssim_comparable_is_the_referees_3_points(gap, ok):
    spec = [(K, dict(ssim=0.4 + gap, lpips=0.20 + j), dict(ssim=0.4, lpips=0.15)) for K in (2, 4) for j in (0.0, 0.002)]
    v = WR.app_g_verdict(_rog_cases(spec))
    assert v.ok is ok and (ok or "SSIM" in v.reason)


def test_per_k_means_over_the_seeds():
    # two seeds at K = 2, DDRM's SSIM 0.40 and 0.44 against the GAN's 0.40: mean gap 0.02, comparable (3 points)
    spec = [(2, dict(ssim=s, lpips=0.2 + 0.01 * i), dict(ssim=0.4, lpips=0.15)) for i, s in enumerate((0.40, 0.44))]
    assert WR.per_k(_rog_cases(spec))[2]["ddrm"]["ssim"] == pytest.approx(0.42)
    assert WR.app_g_verdict(_rog_cases(spec)).status == "reproduced"


def test_rog_rows_read_the_paper_file_before_the_quick_one(monkeypatch):
    _files(monkeypatch, WR, paper=_rog_cases(_paper_like(), "paper"), quick=_rog_cases(_paper_like(lpips=0.1)))
    rows = WR.rows()
    assert [r.scale for r in rows] == ["paper", "paper"] and rows[0].status == "reproduced"
    _files(monkeypatch, WR, quick=_rog_cases(_paper_like(lpips=0.1)))
    assert [r.scale for r in WR.rows()] == ["quick", "quick"]
    _files(monkeypatch, WR)
    assert [r.status for r in WR.rows()] == ["not run", "not run"]


# ---- Fig. 9: the attack with MDE vs FedInverse's MI and MI-HSIC --------------------------------------------
def _fig9_mean(**over):
    m = {"ours": dict(ssim=0.5, lpips=0.2), "ours_raw": dict(ssim=0.1, lpips=0.6),
         "mi": dict(ssim=0.3, lpips=0.4), "mi_hsic": dict(ssim=0.35, lpips=0.35)}
    return {k: {**v, "psnr": 12.0, **over.get(k, {})} for k, v in m.items()}


def test_fig9_is_the_mde_reconstruction_better_than_both_in_both_metrics():
    assert WF.fig9_verdict(_fig9_mean()).status == "reproduced"  # the raw reconstructions are worse: not judged
    for over, word in ((dict(ours=dict(ssim=0.32)), "SSIM vs MI-HSIC:"), (dict(ours=dict(ssim=0.25)), "SSIM vs MI:"),
                       (dict(ours=dict(lpips=0.37)), "LPIPS vs MI-HSIC:"), (dict(mi=dict(lpips=0.1)), "LPIPS vs MI:")):
        v = WF.fig9_verdict(_fig9_mean(**over))
        assert v.status == "partly" and word in v.reason, (over, v)
    v = WF.fig9_verdict(_fig9_mean(ours=dict(lpips=0.5)))  # SSIM better, LPIPS worse than both
    assert v.status == "partly" and v.reason.count("LPIPS") == 2


def _fi_record(scale, mean):
    nn = dict(nn_accuracy=0.5)
    fed = dict(global_accuracy=0.9, mi=dict(attack_accuracy=0.8, **nn), mi_hsic=dict(attack_accuracy=0.7, **nn))
    case = dict(ours=dict(nn_accuracy=0.9, raw=dict(nn_accuracy=0.6)), fedinverse=fed)
    return {"scale": scale, "data": {"setup": dict(few_clients=2, many_clients=10, rounds=5),
                                     "verdict": {"mean": mean}, "cases": [case]}}


def test_fig9_row_reads_the_paper_file_before_the_quick_one(monkeypatch):
    _files(monkeypatch, WF, paper=_fi_record("paper", _fig9_mean()), quick=_fi_record("quick", _fig9_mean(ours=dict(ssim=0.1))))
    (r,) = WF.rows()
    assert r.scale == "paper" and r.status == "reproduced" and "paper scale" in r.ours
    _files(monkeypatch, WF, quick=_fi_record("quick", _fig9_mean(ours=dict(ssim=0.1))))
    (r,) = WF.rows()
    assert r.scale == "quick" and r.status == "partly"
    _files(monkeypatch, WF)
    assert WF.rows()[0].status == "not run"


# ---- Fig. 5, App. H and eq. 3 over three models ---------------------------------------------------------------
GOOD = dict(lpips=(0.2, 0.3, 0.4), ssim=(0.5, 0.4, 0.3), peer=(0.5, 0.45, 0.4), err=(1e-5, 1e-5, 1e-5))
BAD = dict(lpips=(0.4, 0.3, 0.2), ssim=(0.3, 0.4, 0.5), peer=(0.1, 0.1, 0.1), err=(0.5, 0.5, 0.5))


def _arch_record(scale, curves, tau=1):
    """``curves``: ``{arch: dict(lpips=, ssim=, peer=, err=)}``, one value per K of (2, 4, 8)[:len]."""
    pts = [dict(arch=a, K=K, lpips=c["lpips"][i], ssim=c["ssim"][i], peer_ssim=c["peer"][i], replay_error_super=c["err"][i],
                rounding_bound=1e-3, point=dict(images_per_client=2, tau=tau, iterations=3))
           for a, c in curves.items() for i, K in enumerate((2, 4, 8)[:len(c["lpips"])])]
    return {"scale": scale, "data": {"points": pts}}


ALL = ("lenet5", "resnet9-nobn", "resnet18-nobn")


@pytest.fixture
def arch_files(monkeypatch):
    monkeypatch.setattr(WA, "mean_digit_ssim", lambda: 0.3)

    def use(paper=None, quick=None):
        _files(monkeypatch, WA, paper=paper, quick=quick)
        return {r.result_id: r for r in WA.rows()}
    return use


def test_fig5_rows_read_the_paper_file_when_it_holds_two_or_more_clients(arch_files):
    quick = _arch_record("quick", {a: BAD for a in ALL})
    out = arch_files(paper=_arch_record("paper", {a: GOOD for a in ALL}), quick=quick)
    assert all(out[i].scale == "paper" and out[i].status == "reproduced" for i in (*WA.FIG5_IDS.values(), WA.LENET_ID))
    one_k = {a: {k: v[:1] for k, v in GOOD.items()} for a in ALL}  # the paper file has K = 2 only: a trend needs two
    out = arch_files(paper=_arch_record("paper", one_k), quick=quick)
    assert all(out[i].scale == "quick" and out[i].status == "not reproduced" for i in (*WA.FIG5_IDS.values(), WA.LENET_ID))


def test_fig5_verdict_is_on_the_authors_model_without_batchnorm(arch_files):
    out = arch_files(paper=_arch_record("paper", {**{a: GOOD for a in ALL}, "resnet9": BAD, "resnet18": BAD}))
    assert all(out[i].status == "reproduced" for i in WA.FIG5_IDS.values())
    assert "with BatchNorm" in out[WA.FIG5_IDS["ResNet-9"]].ours  # reported beside it


def test_consistency_needs_lpips_rising_for_all_three_models(arch_files):
    out = arch_files(paper=_arch_record("paper", {a: GOOD for a in ALL}))
    assert out[WA.CONSISTENT_ID].status == "reproduced"
    out = arch_files(paper=_arch_record("paper", {**{a: GOOD for a in ALL}, "resnet18-nobn": BAD}))
    v = out[WA.CONSISTENT_ID]
    assert v.status == "partly" and "ResNet-18" in v.reason
    out = arch_files(paper=_arch_record("paper", {"lenet5": GOOD, "resnet9-nobn": GOOD}))  # ResNet-18 missing
    assert out[WA.CONSISTENT_ID].status == "not run" and out[WA.APP_H_ID].status == "not run"


def test_app_h_needs_both_resnets_above_the_mean_digit(arch_files):
    out = arch_files(paper=_arch_record("paper", {a: GOOD for a in ALL}))
    assert out[WA.APP_H_ID].status == "reproduced"
    low = {**GOOD, "peer": (0.25, 0.2, 0.1)}  # below the mean digit's 0.3 at every K
    for arch in ("resnet9-nobn", "resnet18-nobn"):
        out = arch_files(paper=_arch_record("paper", {**{a: GOOD for a in ALL}, arch: low}))
        assert out[WA.APP_H_ID].status in ("partly", "not reproduced"), arch


def test_exact_row_is_the_quick_file_at_one_local_iteration_without_batchnorm(arch_files):
    quick = {**{a: GOOD for a in ALL}, "resnet9": BAD, "resnet18": BAD}  # BatchNorm's batch statistics break eq. 3
    out = arch_files(quick=_arch_record("quick", quick))
    assert out[WA.EXACT_ID].status == "reproduced" and "with BatchNorm" in out[WA.EXACT_ID].ours
    mixed = _arch_record("quick", quick)
    mixed["data"]["points"][-1]["point"] = {**mixed["data"]["points"][-1]["point"], "tau": 3}  # one point at τ = 3
    out = arch_files(quick=mixed)
    assert out[WA.EXACT_ID].status == "not run"
    out = arch_files(quick=_arch_record("quick", {**quick, "resnet18-nobn": {**GOOD, "err": (1e-5, 1e-5, 0.1)}}))
    v = out[WA.EXACT_ID]
    assert v.status == "partly" and "K = 8" in v.reason


# ---- the referee's margins and counts (ledger/wilson.py, wilson_architectures.py, wilson_rog.py) ----
from flbook.ledger import Row  # noqa: E402
from flbook.ledger import referee as R  # noqa: E402
from flbook.ledger import wilson as W  # noqa: E402


def _factor_record(pairs):
    """``pairs``: ``{K: (seed 0 SSIM, seed 1 SSIM)}`` at the default setting, 16 images per client."""
    cases = [dict(case=dict(group="clients", sizes=[16] * K, seed=sd, **W._DEFAULT), ssim=v, own_ssim=v)
             for K, vs in pairs.items() for sd, v in enumerate(vs)]
    return {"data": {"cases": cases}}


def test_factor_seed_sd_pools_the_two_seed_pairs():
    # differences 0.06 and 0.08: sqrt(mean(0.0036/2, 0.0064/2)) = sqrt(0.0025) = 0.05
    assert W.wilson_factor_seed_sd(_factor_record({2: (0.50, 0.44), 4: (0.40, 0.48)})) == pytest.approx(0.05)
    with pytest.raises(LookupError):
        W.wilson_factor_seed_sd(_factor_record({2: (0.5,)}))


def test_paired_noise_margin_is_two_standard_errors_and_decides_just_inside_and_outside():
    pairs = [({"x": 0.0}, {"x": d}) for d in (0.1, 0.2, 0.3)]       # mean 0.2, SE 0.1/√3
    m = W.wilson_paired_noise_margin(pairs, "x")
    assert m == pytest.approx(2 * 0.1 / math.sqrt(3))
    assert W.sign(m + 1e-3, margin=m).ok and not W.sign(m - 1e-3, margin=m).ok
    assert W.wilson_paired_noise_margin(pairs[:1], "x") == 0.0     # one case: no spread


def test_arch_curve_margin_from_the_images_spread():
    c = {2: dict(lpips=0.3, lpips_per_image=[0.2, 0.4]), 4: dict(lpips=0.4, lpips_per_image=[0.35, 0.45])}
    m = WA.wilson_arch_curve_margin(c, "lpips")                     # SEs 0.1 and 0.05: the larger, 2·sqrt(0.02)
    assert m == pytest.approx(2 * math.sqrt(0.02))
    assert WA.fig5_verdict({K: dict(v, ssim=0.5 - K / 100, ssim_per_image=[0.5 - K / 100] * 2) for K, v in c.items()}).status \
        == "partly"                                                 # LPIPS +0.1 within 0.28; SSIM no spread
    assert WA.wilson_arch_curve_margin({2: dict(lpips=0.3)}, "lpips") == 0.0


def _row(result_id, status="reproduced", scale="paper", seeds=(0, 1), file="x.json"):
    return Row(paper=W.PAPER, result_id=result_id, claim="", paper_value="", ours="", status=status,
               reason="" if status == "reproduced" else "r", chapter="part4/x", data="real", file=file,
               scale=scale, seeds=list(seeds))


def test_referee_counts(monkeypatch):
    monkeypatch.setitem(W.WILSON_REFEREE_CACHE, "v", {})
    c = W.referee(_row("Wilson Fig. 7 at the paper's x4 dummy", "partly"))
    assert c.excluded == "control"
    c = W.referee(_row("Wilson Fig. 2 direct post-processing keeps pixel-level correctness", "partly"))
    assert "MNIST" in c.stand_in and "ImageNet" in c.stand_in and not c.excluded
    c = W.referee(_row("Wilson App. D uneven batch sizes"))
    assert c.verdict.status == "partly" and c.cause == "compute"
    assert W.referee(_row("Wilson Lemma 1 divergence ∝ η²τ(τ-1)(K-1)/N", file="live")) == R.COUNTS
    c = W.referee(_row(WA.FIG5_IDS["ResNet-18"], scale="quick", seeds=(0,)))
    assert c.excluded == "quick stand-in"
    assert W.referee(_row(WA.EXACT_ID, scale="quick", seeds=(0,))).one_run_enough
    assert W.referee(_row(WA.LENET_ID, seeds=(0,))) == R.COUNTS      # judge caps its one seed
    assert "ImageNet" in W.referee(_row(WR.FIG8_ID, "partly")).stand_in
    assert W.referee(_row(WF.RESULT_ID)) == R.COUNTS


def test_referee_replaces_a_rule_without_margin(monkeypatch):
    strict = W.Verdict("not reproduced", "K = 2, high quality: ours 0.4")
    monkeypatch.setitem(W.WILSON_REFEREE_CACHE, "v", {"Wilson Fig. 4 peers' images at 2, 4, 8 clients": strict})
    e = R.judge(_row("Wilson Fig. 4 peers' images at 2, 4, 8 clients"), W.referee(_row("Wilson Fig. 4 peers' images at 2, 4, 8 clients")))
    assert e.status == "not reproduced" and e.rule_status == "reproduced" and e.section == "paper"


def test_app_f_more_clients_rows_are_not_run_with_a_cost():
    rows = W.wilson_app_f_more_clients_rows()
    assert [r.result_id for r in rows] == list(W.WILSON_APP_F_MORE_IDS)
    assert all(r.status == "not run" and "CPU-minutes" in r.reason and "part4_factors" in r.reason for r in rows)
