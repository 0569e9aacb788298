"""Compare the image attacks on the CPU and on a CUDA GPU: same inputs, same seeds, same results.

Run it on a machine with a GPU:  python tools/gpu_check.py  (exit status 0 when every attack
agrees within its tolerance, 1 otherwise; without CUDA it prints why and exits 0, skipped).

Every attack draws its random numbers on the CPU and then moves them to the device, so the two
runs start from the same point; what differs is floating-point arithmetic (other kernels,
other summation orders). TF32 is switched off, so both sides compute in float32. Each check
runs few iterations of an iterative attack, where rounding differences have not yet been
amplified by the optimisation, and compares with an absolute tolerance on pixels in [0, 1]
(``PIXEL_TOL``) or, for label counts, exactly.
"""

from __future__ import annotations

import sys
import time

import torch

PIXEL_TOL = 1e-3
"""Largest pixel difference accepted between the CPU and the GPU result (pixels in [0, 1]):
float32 kernels agree to ~1e-6 per operation, and a few dozen optimiser steps amplify it
by at most a few hundred."""


def _lenet(device: str):
    from flprivacy import lenet5
    from flprivacy.attacks.inversion import dlg_init

    model = lenet5(1, 4, image_size=16)
    model.module.to(device)
    return model, dlg_init(model, seed=0).to(device)


def check_inversion(device: str) -> dict[str, float]:
    """invert_update (plain and with a LocalTraining replay) and restore_label_counts."""
    from flprivacy.attacks.inversion import LocalTraining, invert_update, restore_label_counts

    out = {}
    g = torch.Generator().manual_seed(0)
    X = torch.rand(2, 1, 16, 16, generator=g)
    y = torch.tensor([1, 3])
    results = {}
    for dev in ("cpu", device):
        model, theta = _lenet(dev)
        target = model.grad(theta, X.to(dev), y.to(dev)).detach()
        counts = restore_label_counts(model, theta, target, 2, lr=1.0, image_shape=(1, 16, 16),
                                      generator=torch.Generator().manual_seed(1))
        plain = invert_update(model, theta, target, image_shape=(1, 16, 16), labels=y, iterations=30, seed=0)
        local = invert_update(model, theta, target, image_shape=(1, 16, 16), labels=y, iterations=30, seed=0,
                              local=LocalTraining(lr=0.1, momentum=0.9, epochs=2),
                              transform=lambda x: (x - 0.5) / 0.25)
        results[dev] = (counts.cpu(), plain.images.cpu(), local.images.cpu())
    (c0, p0, l0), (c1, p1, l1) = results["cpu"], results[device]
    out["restore_label_counts: count difference"] = float((c0 - c1).abs().sum())
    out["invert_update: max pixel difference"] = float((p0 - p1).abs().max())
    out["invert_update(local=...): max pixel difference"] = float((l0 - l1).abs().max())
    return out


def check_model_inversion(device: str) -> dict[str, float]:
    """model_inversion_attack with an untrained GAN (the numbers, not the attack's success)."""
    from flprivacy import lenet5
    from flprivacy.attacks.model_inversion import MnistGenerator, WganCritic, model_inversion_attack

    images = {}
    for dev in ("cpu", device):
        torch.manual_seed(0)
        G, D = MnistGenerator(width=8).eval().to(dev), WganCritic(width=8).to(dev)
        model = lenet5(1, 10)
        model.module.to(dev)
        theta = model.init_params(0).to(dev)
        r = model_inversion_attack(model, theta, G, D, [0, 1], iterations=10, seed=0)
        images[dev] = r.images.cpu()
    return {"model_inversion_attack: max pixel difference": float((images["cpu"] - images[device]).abs().max())}


def check_diffusion(device: str) -> dict[str, float]:
    """ddrm_restore and mde with an untrained compact U-Net (needs diffusers)."""
    try:
        from flprivacy.diffusion import build_unet, ddrm_restore, mde
    except ImportError as e:  # pragma: no cover
        return {f"diffusion skipped ({e})": 0.0}
    raw = torch.rand(2, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    out: dict[str, dict[str, torch.Tensor]] = {}
    for dev in ("cpu", device):
        torch.manual_seed(0)
        unet = build_unet().eval().to(dev)
        out[dev] = {
            "ddrm": ddrm_restore(unet, raw, sigma_y=0.1, n_steps=3, seed=0).images.cpu(),
            "mde": mde(unet, raw, iterations=2, n_steps=3, seed=0).images.cpu(),
        }
    return {f"{k}: max pixel difference": float((out["cpu"][k] - out[device][k]).abs().max()) for k in out["cpu"]}


def main() -> int:
    if not torch.cuda.is_available():
        print("gpu_check: skipped, CUDA is not available (torch.cuda.is_available() is False).")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = "cuda"
    print(f"gpu_check on {torch.cuda.get_device_name(0)}, torch {torch.__version__}; tolerance {PIXEL_TOL} "
          "(pixels), 0 (label counts)")
    ok = True
    for check in (check_inversion, check_model_inversion, check_diffusion):
        t0 = time.perf_counter()
        for name, diff in check(device).items():
            tol = 0.0 if "count" in name else PIXEL_TOL
            good = diff <= tol
            ok &= good
            print(f"{'ok  ' if good else 'FAIL'} {name}: {diff:.2e} (tolerance {tol:g})")
        print(f"     {check.__name__}: {time.perf_counter() - t0:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
