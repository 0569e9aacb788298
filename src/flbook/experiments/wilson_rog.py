"""Wilson et al. (2025) Fig. 8 and App. G Fig. 15: direct (DDRM) post-processing vs ROG's GAN post-processor.

    python -m flbook.experiments.wilson_rog --threads 1                      # quick: K = 2, 4; two seeds
    FLPRIVACY_SCALE=paper python -m flbook.experiments.wilson_rog --threads 1   # K = 2, 4, 8; two seeds

The raw reconstructions are the diffusion ablation's (:mod:`flbook.experiments.diffusion_ablation`):
the same cases (K clients of 8 MNIST test digits, τ = 3, η = 0.03, attacker = client 0, the same
seeds), attacked by the same code, and the same DDRM call (σ_y estimated on the attacker's own
images, 20 steps, η = 0.85, η_b = 1, the same seed), so the raw and DDRM numbers equal the
ablation's (the record keeps the largest difference to the committed ablation file of the same
scale as a check). Each raw reconstruction is also post-processed by ROG's GAN
(:func:`flprivacy.rog.rog_postprocess`, the committed ``data/weights/rog_mnist32.safetensors``),
with the attack's label for it. All three are scored with the raw images' Hungarian pairing to the
truth in SSIM, PSNR and LPIPS (:func:`flbook.experiments.diffusion_ablation.scores`), and in
*recognisability*, Fig. 8's word, which the paper judges by eye: the fraction of images whose
nearest MNIST training digit (1-NN in pixels over the 20,000 training digits, :func:`recognised`)
has the same class as the true image's nearest training digit. Writes
``book/results/wilson_rog.json`` (``wilson_rog_quick.json`` at quick scale).
"""

from __future__ import annotations

import argparse
import time

import torch

from flprivacy.config import base_seed, child_seed, scale
from flprivacy.diffusion import ddrm_restore, estimate_sigma_y, load_ddpm
from flprivacy.metrics import match_images, quality
from flprivacy.rog import load_rog, rog_postprocess
from . import add_threads_option, load_result, save_result, use_threads
from .diffusion_ablation import scores, settings
from .part4_factors import Case, run_case
from .train_ddpm import load_mnist_train_20k

METHODS = ("raw", "ddrm", "rog")


def nn_classes(images: torch.Tensor, reference: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Class of each image's nearest reference digit (Euclidean distance in pixels, images clipped to [0, 1])."""
    X, y = reference
    d = torch.cdist(images.clamp(0, 1).flatten(1), X.flatten(1))
    return y[d.argmin(1)]


def recognised(images: torch.Tensor, truth: torch.Tensor, reference: tuple[torch.Tensor, torch.Tensor]) -> float:
    """Fraction of paired images whose nearest reference digit has the class of the true image's
    nearest reference digit (a 1-NN reading of "recognisable"; 1-NN on clean MNIST is right about
    95% of the time, so the truth's own class is read the same way rather than looked up)."""
    return float((nn_classes(images, reference) == nn_classes(truth, reference)).float().mean())


def compare_case(case: Case, ddpm, gan, cfg: dict, reference: tuple[torch.Tensor, torch.Tensor]) -> dict:
    """Attack one case and score its raw reconstructions, DDRM's and ROG's GAN's."""
    out = run_case(case, return_images=True)
    raw, truth, labels = out.pop("images"), out.pop("truth"), out.pop("labels")
    n_own = case.sizes[0]
    index = quality(raw, truth).index  # the raw images' pairing, kept for every method (scoring only)
    own = match_images(raw, truth[:n_own])
    t0 = time.perf_counter()
    sigma_y = estimate_sigma_y(raw[own], truth[:n_own])
    ddrm = ddrm_restore(ddpm, raw, sigma_y=sigma_y, labels=labels, n_steps=cfg["ddrm_steps"], eta=cfg["eta"],
                        eta_b=cfg["eta_b"], seed=child_seed(case.seed, 13, 1)).images
    t_ddrm = time.perf_counter() - t0
    t0 = time.perf_counter()
    rog = rog_postprocess(gan, raw, labels)
    t_rog = time.perf_counter() - t0
    res = dict(case=out["case"], K=case.K, N=case.N, sigma_y=sigma_y, attack_seconds=out["seconds"],
               ddrm_seconds=t_ddrm, rog_seconds=t_rog)
    for m, images in (("raw", raw), ("ddrm", ddrm), ("rog", rog)):
        res[m] = dict(scores(images, truth, index, n_own), recognised=recognised(images[index], truth, reference),
                      recognised_peers=recognised(images[index][n_own:], truth[n_own:], reference))
    return res


def ablation_check(results: list[dict]) -> dict | None:
    """Largest |difference| of the raw and DDRM scores to the committed diffusion ablation of the
    same scale, over the cases both hold (None when that file is not committed)."""
    try:
        abl = load_result("diffusion_ablation", scale())
    except (FileNotFoundError, ValueError):
        return None
    ref = {(c["K"], c["case"]["seed"]): c for c in abl["data"]["cases"]}
    diffs, n = [], 0
    for r in results:
        c = ref.get((r["K"], r["case"]["seed"]))
        if c is None:
            continue
        n += 1
        diffs += [abs(r[m][k] - c[m][k]) for m in ("raw", "ddrm") for k in ("ssim", "psnr", "lpips")]
    return dict(cases=n, max_abs_diff=max(diffs) if diffs else None, file=f"diffusion_ablation ({scale()})")


def main(seeds: list[int] | None = None) -> dict:
    cfg = {k: v for k, v in settings().items() if not k.startswith("mde")}
    seeds = seeds or [child_seed(base_seed(), 13, s) for s in range(2)]  # the ablation's seeds
    ddpm, ddpm_record = load_ddpm()
    gan, rog_record = load_rog()
    reference = load_mnist_train_20k()
    cases = [Case("clients", (cfg["images_per_client"],) * K, seed=s) for K in cfg["clients"] for s in seeds]
    print(f"{len(cases)} cases at scale {scale()!r}", flush=True)
    results, t0 = [], time.perf_counter()
    for c in cases:
        r = compare_case(c, ddpm, gan, cfg, reference)
        results.append(r)
        print(f"[{time.perf_counter() - t0:6.0f}s] K={c.K} seed={c.seed} " + "; ".join(
            f"{m}: SSIM {r[m]['ssim']:.3f} PSNR {r[m]['psnr']:.2f} LPIPS {r[m]['lpips']:.3f} "
            f"recognised {r[m]['recognised']:.2f}" for m in METHODS),
            flush=True)
    data = dict(settings=cfg, ddpm=dict(sha256=ddpm_record["sha256"], command=ddpm_record["command"]),
                rog=dict(sha256=rog_record["sha256"], command=rog_record["command"], steps=rog_record["steps"],
                         seconds=rog_record["seconds"]),
                cases=results, ablation_check=ablation_check(results), wall_seconds=time.perf_counter() - t0)
    save_result("wilson_rog", data, seeds=seeds)
    return data


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_threads_option(parser)
    args = parser.parse_args()
    use_threads(args)
    main()
