"""The Part IV factor-analysis command: its grids, one case end to end, and the result frame."""

from __future__ import annotations

import pytest

from flbook.experiments.part4_factors import AttackConfig, Case, estimated_cost, frame, grid, replay_errors, run_case


def test_quick_grid_is_small_and_covers_every_factor(monkeypatch):
    monkeypatch.setenv("FLPRIVACY_SCALE", "quick")
    cases = grid()
    groups = {c.group for c in cases}
    assert {"clients", "batch", "local_iterations", "uneven", "server_lr", "n_images"} <= groups
    assert sum(estimated_cost(c) for c in cases) < 2000  # about a minute of attack iterations
    assert len({c.key() for c in cases}) == len(cases)
    # every trend is run on two seeds derived from the book's base seed, which changes them
    assert len({c.seed for c in cases if c.group == "clients"}) == 2
    monkeypatch.setenv("FLPRIVACY_SEED", "1")
    assert {c.seed for c in grid()}.isdisjoint({c.seed for c in cases})
    # App. F: every upper-bound case has its super-client twin, at τ > 1 and at τ = 1
    for c in (c for c in cases if c.variant == "upper"):
        assert c.tau > 1 and c.K > 1
        assert any(d.variant == "super" and d.sizes == c.sizes and d.fl_lr == c.fl_lr and d.seed == c.seed
                   and d.tau in (1, c.tau) for d in cases)


def test_paper_grid_matches_the_papers_settings(monkeypatch):
    monkeypatch.setenv("FLPRIVACY_SCALE", "paper")
    cases = grid()
    fig5 = {c.K for c in cases if c.group == "clients"}
    assert fig5 == {2, 4, 8, 16} and all(c.sizes == (16,) * c.K for c in cases if c.group == "clients")
    assert all(c.tau == 3 and c.fl_lr == 0.03 for c in cases if c.group in ("clients", "batch"))
    uneven = [c for c in cases if c.group == "uneven" and len(set(c.sizes)) > 1]
    assert {c.K for c in uneven} == {2, 4, 8} and all(c.N == 16 * c.K and set(c.sizes) == {21, 11} for c in uneven)
    # App. F: the upper bound is run where the super-client attack is
    uppers = {(c.K, c.tau, c.fl_lr) for c in cases if c.variant == "upper"}
    supers = {(c.K, c.tau, c.fl_lr) for c in cases if c.variant == "super" and c.sizes == (16,) * c.K
              and c.distance is None and c.scale_factor is None and c.attack_lr is None}
    assert uppers <= supers
    # App. B runs the paper's L2 objective, with the true guess among the candidates
    lr_cases = [c for c in cases if c.group == "server_lr"]
    assert all(c.distance == "l2" and c.tv == 0 for c in lr_cases) and 1.0 in {c.server_lr_guess for c in lr_cases}
    assert len({json_key for json_key in (c.key() for c in cases)}) == len(cases)


def test_one_case_end_to_end(data_file):
    data_file("mnist/t10k-images-idx3-ubyte.gz")
    out = run_case(Case("test", (4, 4), tau=2), AttackConfig(iterations=3), return_images=True)
    assert out["N"] == 8 and out["images"].shape == (8, 1, 28, 28) and len(out["ssim_per_image"]) == 8
    assert 0 < out["label_count_accuracy"] <= 1 and -1 <= out["ssim"] <= 1
    upper = run_case(Case("test", (4, 4), tau=2, variant="upper"), AttackConfig(iterations=2))
    guessed = run_case(Case("test", (4, 4), n_guess=6), AttackConfig(iterations=2))
    df = frame([out, upper, guessed])
    assert list(df["variant"]) == ["super", "upper", "super"] and df["N"].tolist() == [8, 8, 8]
    assert len(frame([out], per_image=True)) == 8
    assert guessed["peer_ssim"] is None and len(guessed["ssim_per_image"]) == 6


def test_cosine_attack_ignores_the_global_learning_rate_guess(data_file):
    """App. B with the cosine distance: a wrong η_g guess only rescales the target."""
    data_file("mnist/t10k-images-idx3-ubyte.gz")
    a = run_case(Case("t", (4, 4)), AttackConfig(iterations=3))
    b = run_case(Case("t", (4, 4), server_lr_guess=3.0), AttackConfig(iterations=3))
    assert a["ssim_per_image"] == b["ssim_per_image"]
    c = run_case(Case("t", (4, 4), server_lr_guess=3.0, distance="l2", tv=0.0), AttackConfig(iterations=3))
    assert c["ssim_per_image"] != a["ssim_per_image"]


@pytest.mark.parametrize("variant", ["super", "upper"])
def test_estimated_cost_grows_with_images_and_steps(variant):
    small = Case("x", (16, 16), tau=1, variant=variant)
    assert estimated_cost(small) < estimated_cost(Case("x", (16, 16), tau=3, variant=variant))
    assert estimated_cost(small) < estimated_cost(Case("x", (32, 32), tau=1, variant=variant))


def test_upper_bound_replays_fedavg_and_the_super_client_does_not(data_file):
    """App. F: the upper bound's replayed update at the true images is FedAvg's (eq. 2) up to
    float32 rounding of the stored models (``replay_rounding_bound``, 2ε(‖θ^t‖ + ‖θ^{t+1}‖)/‖U‖);
    the super-client's (eq. 3) differs by Lemma 1's δ(τ), which at τ = 3 and η = 0.3 is a sizeable
    fraction of the update (required: 100 times the rounding bound), and vanishes at τ = 1. This is
    what catches an "upper bound" that replays the super-client."""
    data_file("mnist/t10k-images-idx3-ubyte.gz")
    upper = run_case(Case("t", (4, 4), tau=3, fl_lr=0.3, variant="upper"), AttackConfig(iterations=1))
    sup = run_case(Case("t", (4, 4), tau=3, fl_lr=0.3), AttackConfig(iterations=1))
    one = run_case(Case("t", (4, 4), tau=1, fl_lr=0.3), AttackConfig(iterations=1))
    assert upper["replay_error"] <= upper["replay_rounding_bound"] < 1e-3
    assert one["replay_error"] <= one["replay_rounding_bound"] < 1e-3
    assert sup["replay_error"] > 100 * sup["replay_rounding_bound"]


# ---- the ledger's Wilson et al. rows (flbook.ledger.wilson) ------------------------------------------


def test_wilson_live_propositions_hold_with_their_dependences():
    from flbook.ledger import wilson

    live = wilson.live_propositions()
    eps = live["eps"]
    assert live["eq2_gap"] <= 64 * eps                       # eq. 1-2: an identity, float64 rounding only
    assert live["super_gap_tau1"] <= 64 * eps < 1e6 * eps < live["super_gap_tau3"]   # eq. 3: δ(1) = 0, δ(3) ≠ 0
    for r in live["lemma"]:
        assert abs(r["ratio"] - 1) <= wilson.LEMMA_TOL and r["cosine"] >= 1 - wilson.LEMMA_TOL, r
    norm = {(r["tau"], r["K"], r["N"]): r["norm"] for r in live["lemma"]}
    # Lemma 1's dependences, each a ratio of leading terms (the O(η) corrections are below LEMMA_TOL each)
    assert abs(norm[(3, 2, 2)] / norm[(2, 2, 2)] / 3 - 1) < 2 * wilson.LEMMA_TOL          # τ(τ-1): 6 / 2
    assert abs(norm[(2, 2, 2)] / norm[(2, 2, 4)] / 2 - 1) < 2 * wilson.LEMMA_TOL          # 1/N at fixed K
    assert abs(norm[(2, 4, 4)] / norm[(2, 2, 4)] / 3 - 1) < 2 * wilson.LEMMA_TOL          # K - 1 at fixed N


def test_wilson_rows_cover_every_result_once():
    from flbook.ledger import wilson

    rows = wilson.rows()
    ids = [r.result_id for r in rows]
    assert len(ids) == len(set(ids)) >= 25
    for needed in ("eq. 1-2", "eq. 3", "Lemma 1", "App. A Remark 2", "Fig. 2", "Fig. 3", "Fig. 4", "Fig. 5 LeNet-5", "Fig. 5 ResNet-9",
                   "Fig. 5 ResNet-18", "Fig. 6 left", "Fig. 6 right", "Fig. 7", "Fig. 8", "Fig. 9", "Fig. 10",
                   "App. B", "App. C", "App. D", "App. E", "App. F", "App. G", "App. H", "LPIPS"):
        assert any(f"Wilson {needed}" in i for i in ids), needed
    assert all(r.paper == wilson.PAPER for r in rows)
    # ROG's GAN (Fig. 8, App. G) and FedInverse (Fig. 9) are run now: their rows come from result files
    assert all(r.status != "not covered" for r in rows if "ROG" in r.result_id or "FedInverse" in r.result_id
               or "GAN" in r.result_id)
    # the live propositions (the ResNets' eq. 3 row reads the architectures file instead)
    assert all(r.file == "live" for r in rows
               if r.result_id.startswith(("Wilson eq.", "Wilson Lemma")) and "ResNet" not in r.result_id)


def _factor_status(record) -> dict[str, str]:
    from flbook.ledger import wilson

    return {r.result_id: r.status for r in wilson._factor_rows(record)}


def test_wilson_factor_rows_follow_the_numbers():
    """The rows' verdicts are the rules applied to the file: change the numbers, the verdict follows."""
    import copy

    from flbook.experiments import load_result

    rec = load_result("part4_factors")
    rising = copy.deepcopy(rec)  # quality that improves with K contradicts Fig. 5
    for c in rising["data"]["cases"]:
        if c["case"]["group"] == "clients":
            c["ssim"] = 0.1 * c["K"] + 0.01 * c["case"]["seed"]
    falling = copy.deepcopy(rec)  # strictly falling with K: Fig. 5 holds
    for c in falling["data"]["cases"]:
        if c["case"]["group"] == "clients":
            c["ssim"] = 1 - 0.01 * c["K"] - 0.001 * c["case"]["seed"]
    assert _factor_status(rising)["Wilson Fig. 5 LeNet-5 quality vs clients"] == "not reproduced"
    assert _factor_status(falling)["Wilson Fig. 5 LeNet-5 quality vs clients"] == "reproduced"
    uneven = copy.deepcopy(rec)  # an uneven split far worse than the even one contradicts App. D
    for c in uneven["data"]["cases"]:
        if c["case"]["group"] == "uneven":
            c["ssim"] -= 0.3
    even = copy.deepcopy(rec)  # identical to the even split: App. D holds
    base = {c["K"]: c["ssim"] for c in rec["data"]["cases"] if c["case"]["group"] == "clients" and c["case"]["seed"] == 0}
    for c in even["data"]["cases"]:
        if c["case"]["group"] == "uneven":
            c["ssim"] = base[c["K"]]
    assert _factor_status(uneven)["Wilson App. D uneven batch sizes"] == "not reproduced"
    assert _factor_status(even)["Wilson App. D uneven batch sizes"] == "reproduced"
    # without the file, every factor row is "not run", with the command that makes it
    missing = _factor_status(None)
    assert set(missing.values()) == {"not run"} and len(missing) == 12


def test_wilson_ablation_rows_follow_the_direction_of_the_change():
    import copy

    from flbook.experiments import load_result
    from flbook.ledger import wilson

    abl = load_result("diffusion_ablation", "quick")
    for delta, want in ((+0.05, "reproduced"), (-0.05, "not reproduced")):
        rec = copy.deepcopy(abl)
        for c in rec["data"]["cases"]:
            c["ddrm"] = {**c["raw"], "ssim": c["raw"]["ssim"] + delta, "psnr": c["raw"]["psnr"] + 20 * delta}
            if "lpips" in c["raw"]:  # Fig. 7 as the paper states it: LPIPS 20-30% better (lower)
                c["ddrm"]["lpips"] = c["raw"]["lpips"] * (1 - 5 * delta)
        fig7, fig2, *_ = wilson._ablation_rows(rec)
        assert fig7.status == want and fig2.status == want, (delta, fig7, fig2)
        for c in rec["data"]["cases"]:  # a file made before LPIPS was scored: Fig. 7 read in SSIM
            for m in ("raw", "ddrm", "mde_picked", "mde_last"):
                c[m].pop("lpips", None)
        fig7, fig2, _, lpips_row = wilson._ablation_rows(rec)
        assert fig7.status == want and fig2.status == want, (delta, fig7, fig2)
        assert "LPIPS not in the file" in fig7.ours and lpips_row.status == "not run"


def test_replay_errors_are_run_cases_without_the_attack():
    for variant in ("super", "upper"):
        case = Case("local_iterations", (2, 2), tau=2, fl_lr=0.3, variant=variant, seed=3)
        alone = replay_errors(case)
        with_attack = run_case(case, AttackConfig(iterations=1))
        assert alone["replay_error"] == with_attack["replay_error"]
        assert alone["replay_rounding_bound"] == with_attack["replay_rounding_bound"]
    with pytest.raises(ValueError, match="n_guess"):
        replay_errors(Case("n_images", (2, 2), n_guess=6))
