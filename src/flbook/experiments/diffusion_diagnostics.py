"""Wilson et al. (2025) Fig. 7: controlled experiments on the DDRM post-processing.

    python -m flbook.experiments.diffusion_diagnostics                    # quick: K = 2, 4; two seeds
    FLPRIVACY_SCALE=paper python -m flbook.experiments.diffusion_diagnostics   # K = 2, 4, 8; three seeds

The committed ablation (``diffusion_ablation``) finds DDRM lowering mean SSIM while the paper
reports a 20-30% gain in LPIPS (§4, Fig. 7). Three questions, one part of the result file each:

- ``prior``: is the book's small DDPM the bottleneck? DDRM on measurements of true MNIST test
  digits that follow its noise model exactly (:func:`flprivacy.diffusion.simulate_raw`:
  y = H x + σ_y n with σ_y = 0 and 0.05, conditioned on the true labels), against the bicubic
  image of the same dummy, at x2 (14x14 dummy, the book's attack) and x4 (7x7, the paper's
  "bicubic sampling with a scale factor of 4", §4). If DDRM does not beat bicubic here, the
  prior is the bottleneck.
- ``attack``: the ablation's attack cases (K clients of 8 MNIST test images, τ = 3, η = 0.03,
  :func:`flbook.experiments.part4_factors.run_case`; at x2 the same cases and seeds as the
  ablation) post-processed by DDRM at every σ_y of a grid, at the σ_y the attacker estimates on
  its own images (:func:`flprivacy.diffusion.estimate_sigma_y`, the ablation's choice) and at the
  grid value that is best on the attacker's own images (what an attacker can pick); and the same
  cases attacked at x4 (``scale_factor=4``) and post-processed with the x4 operator.

Every image set is scored in SSIM, PSNR and LPIPS (:func:`flprivacy.diffusion.lpips_digits`) over
all images, the peers' images and the attacker's own, with the raw images' pairing to the truth.
Writes ``book/results/diffusion_diagnostics.json`` (``_quick`` at quick scale); the means the chapter
and the ledger read are :func:`flbook.ledger.wilson.diagnostics_numbers`.
"""

from __future__ import annotations

import argparse
import time

import torch

from flprivacy.config import at_scale, base_seed, child_seed, generator, scale
from flprivacy.data import load_mnist
from flprivacy.diffusion import ddrm_restore, estimate_sigma_y, load_ddpm, lpips_digits, simulate_raw, upsampler_operator
from flprivacy.metrics import match_images, quality
from . import add_threads_option, save_result, use_threads
from .part4_factors import Case, run_case

SETTINGS = dict(images_per_client=8, ddrm_steps=20, eta=0.85, eta_b=1.0, prior_images=64, prior_sigmas=[0.0, 0.05],
                sigma_grid=[0.0, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6], factors=[2, 4])
"""DDRM as in the ablation (Kawar et al.'s 20 steps, η = 0.85, η_b = 1); σ_y in model scale ([-1, 1] pixels)."""


def settings() -> dict:
    """The grid at the current scale."""
    return dict(SETTINGS, clients=at_scale(quick=[2, 4], paper=[2, 4, 8]))


def seeds_at_scale() -> list[int]:
    """The ablation's seeds (two at quick scale, three at paper scale)."""
    return [child_seed(base_seed(), 13, s) for s in range(at_scale(quick=2, paper=3))]


def score(images: torch.Tensor, truth: torch.Tensor, n_own: int = 0) -> dict:
    """Mean SSIM, PSNR and LPIPS of paired ``images`` against ``truth``: all, and (when ``n_own``)
    the first ``n_own`` (the attacker's own) and the rest (the peers')."""
    q = quality(images, truth, match=False)
    lp = lpips_digits(images, truth)
    out = dict(ssim=float(q.ssim.mean()), psnr=float(q.psnr.mean()), lpips=float(lp.mean()))
    if n_own:
        out.update(ssim_peers=float(q.ssim[n_own:].mean()), psnr_peers=float(q.psnr[n_own:].mean()),
                   lpips_peers=float(lp[n_own:].mean()), ssim_own=float(q.ssim[:n_own].mean()),
                   lpips_own=float(lp[:n_own].mean()))
    return out


def _ddrm(model, raw, sigma_y, labels, factor, cfg, seed):
    return ddrm_restore(model, raw, sigma_y=sigma_y, labels=labels, operator=upsampler_operator(low=28 // factor),
                        n_steps=cfg["ddrm_steps"], eta=cfg["eta"], eta_b=cfg["eta_b"], seed=seed).images


def prior_check(model, cfg: dict, seed: int) -> list[dict]:
    """DDRM against bicubic on measurements of true digits that follow DDRM's noise model."""
    X, y = load_mnist("test")
    pick = torch.randperm(X.shape[0], generator=generator(child_seed(seed, 13, 200)))[:cfg["prior_images"]]
    truth, labels = X[pick], y[pick]
    out = []
    for factor in cfg["factors"]:
        for sigma_y in cfg["prior_sigmas"]:
            raw = simulate_raw(truth, low=28 // factor, sigma_y=sigma_y, seed=child_seed(seed, 13, 201))
            t0 = time.perf_counter()
            restored = _ddrm(model, raw, sigma_y, labels, factor, cfg, child_seed(seed, 13, 202))
            out.append(dict(seed=seed, factor=factor, sigma_y=sigma_y, n_images=len(pick),
                            ddrm_seconds=time.perf_counter() - t0, bicubic=score(raw, truth),
                            ddrm=score(restored, truth)))
    return out


def attack_case(case: Case, model, cfg: dict) -> dict:
    """One attack at ``case.scale_factor``, post-processed at every σ_y of the grid and at the estimate."""
    factor = case.scale_factor or 2
    out = run_case(case, return_images=True)
    raw, truth, labels = out.pop("images"), out.pop("truth"), out.pop("labels")
    n_own = case.sizes[0]
    index = quality(raw, truth).index  # the raw images' pairing, kept for every method (scoring only)
    own = match_images(raw, truth[:n_own])  # what the attacker can pair: its own images
    sigma_est = estimate_sigma_y(raw[own], truth[:n_own], upsampler_operator(low=28 // factor))
    seed = child_seed(case.seed, 13, 1)  # the ablation's DDRM seed
    t0 = time.perf_counter()
    sweep = []
    sigmas = cfg["sigma_grid"] + [sigma_est]
    for i, sigma_y in enumerate(sigmas):
        restored = _ddrm(model, raw, sigma_y, labels, factor, cfg, seed)
        own_ssim = float(quality(restored[own], truth[:n_own], match=False).ssim.mean())
        sweep.append(dict(sigma_y=sigma_y, estimated=i == len(sigmas) - 1, attacker_own_ssim=own_ssim,
                          **score(restored[index], truth, n_own)))
    grid = sweep[:-1]
    picked = max(range(len(grid)), key=lambda i: grid[i]["attacker_own_ssim"])
    return dict(case=out["case"], K=case.K, N=case.N, factor=factor, attack_seconds=out["seconds"],
                ddrm_seconds=time.perf_counter() - t0, sigma_estimated=sigma_est, raw=score(raw[index], truth, n_own),
                ddrm_estimated=sweep[-1], ddrm_picked=grid[picked], sweep=grid)


def main(seeds: list[int] | None = None) -> dict:
    cfg = settings()
    seeds = seeds or seeds_at_scale()
    model, record = load_ddpm()
    print(f"scale {scale()!r}, seeds {seeds}", flush=True)
    t0 = time.perf_counter()
    data = dict(settings=cfg, weights=dict(sha256=record["sha256"], command=record["command"]), prior=[], attack=[])

    def save() -> None:
        data["wall_seconds"] = time.perf_counter() - t0
        save_result("diffusion_diagnostics", data, seeds=seeds)

    for s in seeds:
        for p in prior_check(model, cfg, s):
            data["prior"].append(p)
            print(f"[{time.perf_counter() - t0:6.0f}s] prior x{p['factor']} σ_y={p['sigma_y']}: SSIM bicubic "
                  f"{p['bicubic']['ssim']:.3f} DDRM {p['ddrm']['ssim']:.3f}; LPIPS bicubic {p['bicubic']['lpips']:.3f} "
                  f"DDRM {p['ddrm']['lpips']:.3f}", flush=True)
    save()
    for factor in cfg["factors"]:
        for K in cfg["clients"]:
            for s in seeds:
                case = Case("clients", (cfg["images_per_client"],) * K, seed=s,
                            scale_factor=None if factor == 2 else factor)
                r = attack_case(case, model, cfg)
                data["attack"].append(r)
                print(f"[{time.perf_counter() - t0:6.0f}s] x{factor} K={K} seed={s}: peers' SSIM raw "
                      f"{r['raw']['ssim_peers']:.3f} DDRM(σ̂={r['sigma_estimated']:.2f}) "
                      f"{r['ddrm_estimated']['ssim_peers']:.3f} DDRM(pick σ={r['ddrm_picked']['sigma_y']}) "
                      f"{r['ddrm_picked']['ssim_peers']:.3f}; peers' LPIPS raw {r['raw']['lpips_peers']:.3f} DDRM(σ̂) "
                      f"{r['ddrm_estimated']['lpips_peers']:.3f}", flush=True)
                save()
    return data


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_threads_option(parser)
    args = parser.parse_args()
    use_threads(args)
    main()
