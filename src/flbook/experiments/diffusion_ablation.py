"""Wilson et al. (2025) Fig. 7 ablation: raw reconstructions vs diffusion post-processing vs number of clients.

    python -m flbook.experiments.diffusion_ablation                    # quick: K = 2, 4; two seeds
    FLPRIVACY_SCALE=paper python -m flbook.experiments.diffusion_ablation   # K = 2, 4, 8; two seeds

Each case is one curious-client attack of the book (:func:`flbook.experiments.part4_factors.run_case`,
group ``"clients"``: K clients with B MNIST test images each, τ = 3, η = 0.03; the attacker is
client 0). Its raw reconstructions are post-processed with the book's DDPM
(``data/weights/ddpm_mnist32.safetensors``, :func:`flprivacy.diffusion.load_ddpm`):

- DDRM (§3.2; :func:`flprivacy.diffusion.ddrm_restore`) with σ_y estimated on the attacker's own
  images (:func:`flprivacy.diffusion.estimate_sigma_y`);
- MDE (§3.3; :func:`flprivacy.diffusion.mde`), scored at every recorded iteration, at the last one,
  and at the iteration the attacker would pick by its own images' SSIM (the paper picks by eye).

All outputs keep the order of the raw reconstructions, so every method is scored with the
raw images' Hungarian pairing to the truth (:func:`flprivacy.metrics.quality`): SSIM, PSNR and
LPIPS (the paper's metric; :func:`flprivacy.diffusion.lpips_digits`, AlexNet v0.1 at 64x64) over
all N images and over the peers' images only. The controlled experiments on DDRM (the prior on
clean measurements, σ_y, the x4 operating point) are ``flbook.experiments.diffusion_diagnostics``. Writes ``book/results/diffusion_ablation.json``
(``diffusion_ablation_quick.json`` at quick scale).
"""

from __future__ import annotations

import argparse
import time

import torch

from flprivacy.config import at_scale, base_seed, child_seed, scale
from flprivacy.diffusion import ddrm_restore, estimate_sigma_y, load_ddpm, lpips_digits, mde
from flprivacy.metrics import match_images, quality
from . import add_threads_option, save_result, use_threads
from .part4_factors import Case, run_case

SETTINGS = dict(images_per_client=8, ddrm_steps=20, eta=0.85, eta_b=1.0, mde_steps=10, mde_lr=0.05)


def settings() -> dict:
    """The grid and the post-processors' settings at the current scale."""
    return dict(SETTINGS, clients=at_scale(quick=[2, 4], paper=[2, 4, 8]),
                mde_iterations=at_scale(quick=30, paper=60), mde_record_every=5)


def scores(images: torch.Tensor, truth: torch.Tensor, index: torch.Tensor, n_own: int) -> dict:
    """Mean SSIM, PSNR and LPIPS of ``images[index]`` against ``truth`` (all images, peers only, own only)."""
    q = quality(images[index], truth, match=False)
    lp = lpips_digits(images[index], truth)
    return dict(ssim=float(q.ssim.mean()), psnr=float(q.psnr.mean()), lpips=float(lp.mean()),
                ssim_peers=float(q.ssim[n_own:].mean()), psnr_peers=float(q.psnr[n_own:].mean()),
                lpips_peers=float(lp[n_own:].mean()), ssim_own=float(q.ssim[:n_own].mean()),
                lpips_own=float(lp[:n_own].mean()))


def postprocess_case(case: Case, model, cfg: dict) -> dict:
    """Attack one case, post-process its reconstructions with DDRM and MDE, score all three."""
    out = run_case(case, return_images=True)
    raw, truth, labels = out.pop("images"), out.pop("truth"), out.pop("labels")
    n_own = case.sizes[0]
    index = quality(raw, truth).index  # the raw images' pairing, kept for every method (scoring only)
    own = match_images(raw, truth[:n_own])  # what the attacker can do: pair its own images alone
    t0 = time.perf_counter()
    sigma_y = estimate_sigma_y(raw[own], truth[:n_own])
    ddrm = ddrm_restore(model, raw, sigma_y=sigma_y, labels=labels, n_steps=cfg["ddrm_steps"], eta=cfg["eta"],
                        eta_b=cfg["eta_b"], seed=child_seed(case.seed, 13, 1))
    t_ddrm = time.perf_counter() - t0
    t0 = time.perf_counter()
    m = mde(model, raw, labels, iterations=cfg["mde_iterations"], lr=cfg["mde_lr"], n_steps=cfg["mde_steps"],
            seed=child_seed(case.seed, 13, 2), record_every=cfg["mde_record_every"])
    t_mde = time.perf_counter() - t0
    curve = [scores(h, truth, index, n_own) for h in m.history]
    own_curve = [float(quality(h[own], truth[:n_own], match=False).ssim.mean()) for h in m.history]
    pick = max(range(len(curve)), key=lambda i: own_curve[i])  # what the attacker can see
    return dict(case=out["case"], K=case.K, N=case.N, sigma_y=sigma_y, attack_seconds=out["seconds"],
                ddrm_seconds=t_ddrm, mde_seconds=t_mde, raw=scores(raw, truth, index, n_own),
                ddrm=scores(ddrm.images, truth, index, n_own), mde_last=curve[-1], mde_picked=curve[pick],
                mde_picked_iteration=m.recorded[pick],
                mde_curve=dict(iterations=m.recorded, scores=curve, attacker_own_ssim=own_curve),
                mde_loss=m.loss)


def main(seeds: list[int] | None = None) -> dict:
    cfg = settings()
    seeds = seeds or [child_seed(base_seed(), 13, s) for s in range(2)]
    model, record = load_ddpm()
    cases = [Case("clients", (cfg["images_per_client"],) * K, seed=s) for K in cfg["clients"] for s in seeds]
    print(f"{len(cases)} cases at scale {scale()!r}", flush=True)
    results, t0 = [], time.perf_counter()
    for c in cases:
        r = postprocess_case(c, model, cfg)
        results.append(r)
        print(f"[{time.perf_counter() - t0:6.0f}s] K={c.K} seed={c.seed} SSIM raw {r['raw']['ssim']:.3f} "
              f"DDRM {r['ddrm']['ssim']:.3f} MDE(picked it {r['mde_picked_iteration']}) {r['mde_picked']['ssim']:.3f} "
              f"last {r['mde_last']['ssim']:.3f}; PSNR raw {r['raw']['psnr']:.2f} DDRM {r['ddrm']['psnr']:.2f}; "
              f"LPIPS raw {r['raw']['lpips']:.3f} DDRM {r['ddrm']['lpips']:.3f}", flush=True)
        data = dict(settings=cfg, weights=dict(sha256=record["sha256"], command=record["command"]), cases=results,
                    wall_seconds=time.perf_counter() - t0)
        save_result("diffusion_ablation", data, seeds=seeds)
    return data


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_threads_option(parser)
    args = parser.parse_args()
    use_threads(args)
    main()
