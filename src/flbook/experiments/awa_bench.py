"""AWA's cost per attack iteration: the fused layer-weighted loss against the per-layer form.

    python -m flbook.experiments.awa_bench            # ResNet-18, 32x32, case 1, 1 thread (~2 CPU-minutes)

Song et al.'s layer-weighted loss (eq. 23) was computed layer by layer: the update was sliced for
each of ResNet-18's 41 layers, and the backward of every slice filled a zero tensor the size of
θ (11.2 million entries). The library now computes the same loss as one weighted elementwise
sum Σ_i w_i (Δθ̂_i - Δθ_i)², with the per-parameter weights of eq. 24 built once from Q and
the q_en of the enhanced layers (eq. 27-30) written into a copy each iteration.

This command times both, side by side in one process, on the setting of ``awa_table4 --cost``
(ResNet-18 at 32x32, N = 4 CIFAR-10 images, case 1: E = B = 1, η = 10⁻³, Adam at 0.1, Table
III's Q for case 1), alternating the two for ``--repeats`` rounds of ``--iterations`` attack
iterations after one warm-up iteration each, and reports medians; DLG's unweighted loss (the
floor: the same replay with no weights) is timed beside them. It also records the two losses'
relative difference at the first iteration (same dummy, float32) and writes
``book/results/awa_bench.json`` (fixed scale: the setting does not depend on the scale).

It then times the fused attack under two settings of glibc's allocator
(:func:`~flbook.experiments.keep_freed_memory`, which the AWA commands apply): the default and
"keep freed memory". An allocator setting holds for a whole process, so the two run in child
processes of this command, alternating, each timing ``--iterations`` iterations after one
warm-up; the record holds each child's wall, user and kernel (system) CPU seconds per iteration,
its minor page faults and its final loss (equal in both: the setting moves memory, not numbers).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from flprivacy.attacks import awa
from flprivacy.attacks.inversion import update_distance
from flprivacy.config import base_seed, child_seed
from ..papers.song import TABLE_III
from flprivacy.models import resnet18
from . import (ALLOCATORS, add_threads_option, keep_freed_memory, positive_int, save_result, time_allocators,
               use_threads)
from .awa_table4 import client_images


def per_layer_loss(layers: Sequence[awa.Layer], Q: awa.AWAWeights) -> Callable[[Tensor, Tensor], Tensor]:
    """Eq. 23 as the library computed it before the fused form (the reference being timed): the
    weights of eq. 24/27 from :func:`~flprivacy.attacks.awa.layer_weights`, then one squared norm
    per layer slice, stacked and weighted."""

    def loss(pred: Tensor, target: Tensor) -> Tensor:
        w = awa.layer_weights(pred.detach(), target, layers, Q)
        sq = torch.stack([((pred[l.start:l.stop] - target[l.start:l.stop]) ** 2).sum() for l in layers])
        return (w.to(sq.dtype) * sq).sum()

    return loss


def _case1() -> tuple:
    """The cost setting: ResNet-18, its problem at case 1 and Table III's Q."""
    X, y = client_images(child_seed(base_seed(), 100), 4, 32)
    model = resnet18()
    theta = model.init_params(child_seed(base_seed(), 1))
    theta_next, orders = awa.client_update(model, theta, X, y, lr=1e-3, epochs=1, batches=1, seed=0)
    labels = y[orders[0]]
    shape = (3, 32, 32)
    pb = awa._problem(model, theta, theta_next, labels, shape, lr=1e-3, epochs=1, batches=1, epoch=1,
                      approximate=False, where="awa_bench")
    return model, pb, shape, awa.AWAWeights(**TABLE_III["case 1"])


def _attack(model, pb, shape: tuple, loss_fn: Callable[[Tensor, Tensor], Tensor], n: int) -> awa.Reconstruction:
    """``n`` iterations of the attack with ``loss_fn`` on the cost setting's problem (Adam at 0.1, case 1)."""
    return awa._run(model, pb.start, pb.target, pb.labels, shape, loss_fn=loss_fn, lr=pb.lr, batches=1, epochs=1,
                    attack_lr=0.1, iterations=n, seed=0)[0]


def time_fused(iterations: int) -> dict:
    """One child of :func:`bench_allocator`: the fused AWA attack, one warm-up iteration, then
    ``iterations`` timed ones; wall, user and system CPU seconds per iteration, minor page faults
    and the final loss."""
    model, pb, shape, Q = _case1()
    loss_fn = awa._WeightedLoss(awa.model_layers(model), pb.target, Q)
    _attack(model, pb, shape, loss_fn, 1)  # warm-up
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    rec = _attack(model, pb, shape, loss_fn, iterations)
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
    return dict(wall=wall / iterations, user=(r1.ru_utime - r0.ru_utime) / iterations,
                system=(r1.ru_stime - r0.ru_stime) / iterations, minor_faults=r1.ru_minflt - r0.ru_minflt,
                final_loss=float(rec.loss[-1]))


def bench_allocator(iterations: int = 3, repeats: int = 2, threads: int = 1) -> dict:
    """The fused attack under each of :data:`~flbook.experiments.ALLOCATORS`, in alternating child
    processes (:func:`~flbook.experiments.time_allocators`); medians per setting and the default's
    over the kept setting's (wall and CPU = user + system)."""
    out = time_allocators("awa_bench", ["--iterations", str(iterations), "--threads", str(threads)], repeats,
                          "final_loss")
    return dict(out, iterations=iterations, threads=threads, same_loss=out.pop("same_numbers"))


def bench(iterations: int = 3, repeats: int = 2) -> dict:
    """Seconds per attack iteration of AWA with the per-layer and the fused loss, and of DLG."""
    model, pb, shape, Q = _case1()
    layers = awa.model_layers(model)
    losses = {"per-layer (before)": per_layer_loss(layers, Q),
              "fused (now)": awa._WeightedLoss(layers, pb.target, Q),
              "DLG (unweighted)": lambda p, t: update_distance(p, t, "l2")}
    # one warm-up iteration each, which also gives the first loss values
    first = {name: _attack(model, pb, shape, fn, 1).loss[0] for name, fn in losses.items()}
    times: dict[str, list[float]] = {name: [] for name in losses}
    for r in range(repeats):
        for name, fn in losses.items():
            t0 = time.perf_counter()
            _attack(model, pb, shape, fn, iterations)
            times[name].append((time.perf_counter() - t0) / iterations)
            print(f"repeat {r}: {name} {times[name][-1]:.2f} s/it", flush=True)
    med = {name: statistics.median(v) for name, v in times.items()}
    before, now = first["per-layer (before)"], first["fused (now)"]
    return dict(seconds_per_iteration=med, seconds_per_iteration_all=times,
                speedup=med["per-layer (before)"] / med["fused (now)"],
                overhead_over_dlg_before=med["per-layer (before)"] / med["DLG (unweighted)"],
                overhead_over_dlg_now=med["fused (now)"] / med["DLG (unweighted)"],
                first_loss=first, first_loss_rel_diff=abs(now - before) / abs(before),
                Q=Q.as_dict(), iterations=iterations, repeats=repeats, threads=torch.get_num_threads(),
                model="resnet18", side=32, n_images=4, case=1, parameters=int(pb.target.numel()),
                layers=len(layers))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=positive_int, default=3, help="timed attack iterations per run")
    parser.add_argument("--repeats", type=positive_int, default=2, help="alternating rounds (medians reported)")
    parser.add_argument("--child", choices=ALLOCATORS, default=None,
                        help="internal: time the fused attack under this allocator setting, print JSON, save nothing")
    add_threads_option(parser)
    args = parser.parse_args(argv)
    use_threads(args)
    if args.child is not None:
        if args.child == ALLOCATORS[1] and not keep_freed_memory():
            raise SystemExit("awa_bench: this C library has no mallopt; the allocator comparison needs glibc.")
        print(json.dumps(time_fused(args.iterations)))
        return
    t0 = time.perf_counter()
    data = bench(args.iterations, args.repeats)
    data["allocator"] = bench_allocator(args.iterations, args.repeats, args.threads)
    data["seconds"] = time.perf_counter() - t0
    save_result("awa_bench", data, seeds=[base_seed()], scale_="fixed")
    print(f"wrote awa_bench in {data['seconds']:.0f} s: fused {data['speedup']:.2f}x faster than per-layer; "
          f"first losses differ by {data['first_loss_rel_diff']:.1e} (relative); keeping freed memory "
          f"{data['allocator']['wall_ratio']:.2f}x faster (wall), {data['allocator']['cpu_ratio']:.2f}x less CPU")


if __name__ == "__main__":
    main()
