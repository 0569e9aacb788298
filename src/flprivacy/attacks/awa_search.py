"""The Bayesian optimisation of AWA's layer weights (Song, Wang & Zuazua 2025, §4.2.2 and Alg. 2):
:func:`tune_weights` searches Q = (q_cv, q_bn, q_fc, q_en, p_mean, p_var) over the ranges of
Table II (:data:`~flprivacy.attacks.awa.TABLE_II`), minimising eq. 33 with Optuna's GP sampler and
expected improvement (eq. 35-40), then runs the final attack with Q*; :class:`WeightSearch` is its
result. The attack each trial runs (the interpolated models, the layer weights, the loss) is
:mod:`.awa`, where these names are importable too.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from torch import Tensor

from ..models import FLModel
from ..validation import NonFiniteError, check_int, check_positive, check_seed
from .awa import TABLE_II, UNWEIGHTED, AWAWeights, _awa_run, _check_flag, _problem
from .inversion import Reconstruction


# ---- §4.2.2: Bayesian optimisation of Q -----------------------------------------------------------
@dataclass
class WeightSearch:
    """The result of :func:`tune_weights`.

    Attributes:
        best: Q* (Song Alg. 2, line 15).
        values: f(Q_i) of every completed trial (eq. 33; a trial stopped early reports its value then).
        iterations: attack iterations each trial ran.
        stopped: whether each trial was stopped early by the pruner.
        params: Q_i of every trial.
        reconstruction: the final attack with Q* (Alg. 2, line 16).
        seconds: wall-clock time of the trials (``search_seconds``) and of the final attack.
        unweighted_value: f(Q) of the trial at Q = :data:`~flprivacy.attacks.awa.UNWEIGHTED` (DLG's loss,
            eq. 10), enqueued as the first trial; ``None`` when it was not evaluated.
    """

    best: AWAWeights
    values: list[float]
    iterations: list[int]
    stopped: list[bool]
    params: list[dict[str, float]]
    reconstruction: Reconstruction
    search_seconds: float
    final_seconds: float
    settings: dict = field(default_factory=dict)
    unweighted_value: float | None = None

    @property
    def total_iterations(self) -> int:
        """Attack iterations of the whole protocol (trials plus the final attack)."""
        return int(sum(self.iterations)) + int(self.reconstruction.settings.get("iterations_run", 0))

    def cumulative_minimum(self) -> list[float]:
        """min_{j <= i} f(Q_j) over trials i (Song Fig. 1)."""
        out, best = [], math.inf
        for v in self.values:
            best = min(best, v)
            out.append(best)
        return out


def _storage_url(storage: str | Path | None, where: str) -> str | None:
    """An Optuna RDB storage URL: a path becomes ``sqlite:///<absolute path>``; a URL is kept."""
    if storage is None:
        return None
    if not isinstance(storage, (str, os.PathLike)) or not str(storage).strip():
        raise TypeError(f"{where}: storage must be a path to an SQLite file or an Optuna storage URL "
                        f"(e.g. 'sqlite:///awa.db'); got {storage!r}.")
    text = str(storage)
    if "://" in text:
        return text
    path = os.path.abspath(os.fspath(storage))
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"{where}: storage={text!r}: the folder {parent} does not exist; create it first.")
    return f"sqlite:///{path}"


def tune_weights(model: FLModel, theta: Tensor, theta_next: Tensor, *, labels: Tensor, image_shape: Sequence[int],
                 lr: float, epochs: int = 1, batches: int = 1, n_trials: int = 50, n_startup_trials: int = 12,
                 iterations: int = 1000, trial_iterations: int | None = None, prune: bool = False,
                 report_every: int = 50, epoch: int = 1, approximate: bool | None = None, attack_lr: float = 0.1,
                 seed: int = 0, progress: bool = False, enqueue_unweighted: bool = True,
                 storage: str | Path | None = None, study_name: str = "awa", gradient_scale: bool = False,
                 callback: Callable[[int, Tensor], None] | None = None) -> WeightSearch:
    """Song Alg. 2: Bayesian optimisation of Q over Table II, then the final attack with Q*.

    Each trial is a full AWA attack (``trial_iterations`` Adam steps, default ``iterations``) and
    is scored by f(Q) = ‖G(X̂*) - Δθ‖² (eq. 33). The first ``n_startup_trials`` Q are drawn
    uniformly at random, the others by Optuna's :class:`optuna.samplers.GPSampler`: a Gaussian
    process surrogate (eq. 35-36) and the expected improvement (eq. 37-40), maximised by
    L-BFGS-B. Every trial starts from the same dummy (``seed``), so f is deterministic.
    Song's protocol is ``n_trials=50, n_startup_trials=12`` with ``trial_iterations =
    iterations = 1000``: 51,000 attack iterations.

    ``enqueue_unweighted=True`` (not in the paper) makes the first trial Q = :data:`~flprivacy.attacks.awa.UNWEIGHTED`,
    all weights 1: eq. 23 is then DLG's eq. 10, a corner of Table II's box that uniform draws
    never reach. It counts as one of the ``n_startup_trials`` (the others stay random), its
    f is :attr:`WeightSearch.unweighted_value`, and Q* beats DLG's loss only if
    ``min(values) < unweighted_value``.

    ``storage`` (a path to an SQLite file, or an Optuna storage URL) keeps the study in Optuna's
    RDB storage under ``study_name``: a second call with the same storage and name resumes it,
    running only the trials still missing to ``n_trials`` (the unweighted trial is enqueued only
    in a new study), and the file can be inspected with Optuna's tools.

    ``gradient_scale=True`` (not in the paper) divides eq. 23 by η² in every trial and in the final
    attack (:func:`~flprivacy.attacks.awa.awa_attack`); f(Q) is unchanged.

    Speed-ups (not in the paper): ``trial_iterations < iterations`` shortens the trials only;
    ``prune=True`` stops a trial when its eq. 33 distance after ``report_every`` iterations is
    worse than the median of earlier trials at the same point (Optuna's
    :class:`optuna.pruners.MedianPruner`). ``callback(iteration, images)`` follows the final
    attack only. A stopped trial is recorded as *completed* with its
    value at stopping (an upper estimate for a decreasing loss), so the GP still learns that
    the region is poor; Optuna's own ``TrialPruned`` would hide it from the GP.
    """
    import optuna

    where = "tune_weights"
    check_seed("seed", seed, where)
    check_int("n_trials", n_trials, where, minimum=1)
    check_int("n_startup_trials", n_startup_trials, where, minimum=1)
    check_int("iterations", iterations, where, minimum=1)
    trial_iterations = iterations if trial_iterations is None else check_int("trial_iterations", trial_iterations,
                                                                             where, minimum=1)
    check_int("report_every", report_every, where, minimum=1)
    check_positive("attack_lr", attack_lr, where)
    _check_flag("enqueue_unweighted", enqueue_unweighted, where)
    _check_flag("gradient_scale", gradient_scale, where)
    if not isinstance(study_name, str) or not study_name.strip():
        raise ValueError(f"{where}: study_name must be a non-empty string naming the study in storage; "
                         f"got {study_name!r}.")
    url = _storage_url(storage, where)
    pb = _problem(model, theta, theta_next, labels, image_shape, lr=lr, epochs=epochs, batches=batches, epoch=epoch,
                  approximate=approximate, where=where)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = optuna.samplers.GPSampler(seed=seed % 2**32, n_startup_trials=n_startup_trials,
                                            deterministic_objective=True)
    pruner = (optuna.pruners.MedianPruner(n_startup_trials=n_startup_trials, n_warmup_steps=0)
              if prune else optuna.pruners.NopPruner())

    def objective(trial: optuna.Trial) -> float:
        Q = AWAWeights(**{k: trial.suggest_float(k, lo, hi) for k, (lo, hi) in TABLE_II.items()})

        def report(it: int, f: float) -> bool:
            trial.report(f, it)
            return prune and trial.should_prune()

        rec, done = _awa_run(model, pb, image_shape, Q, attack_lr=attack_lr, iterations=trial_iterations, seed=seed,
                             gradient_scale=gradient_scale, report=report, report_every=report_every)
        trial.set_user_attr("iterations", done)
        trial.set_user_attr("stopped", done < trial_iterations)
        value = rec.settings["objective"]
        if not math.isfinite(value):
            raise NonFiniteError(f"tune_weights: trial {trial.number} gave a non-finite objective; lower attack_lr.")
        return value

    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study = optuna.create_study(direction="minimize", sampler=sampler, pruner=pruner, storage=url,
                                        study_name=study_name if url else None, load_if_exists=url is not None)
            complete = optuna.trial.TrialState.COMPLETE
            if enqueue_unweighted and not study.trials:
                study.enqueue_trial(dict(UNWEIGHTED))
            remaining = n_trials - len(study.get_trials(deepcopy=False, states=(complete,)))
            if remaining > 0:
                study.optimize(objective, n_trials=remaining, show_progress_bar=progress)
    finally:
        optuna.logging.set_verbosity(verbosity)
    search_seconds = time.perf_counter() - t0
    trials = study.get_trials(deepcopy=False, states=(complete,))
    best = AWAWeights(**study.best_params)
    unweighted = [t.value for t in trials if t.params == UNWEIGHTED]
    rec, _ = _awa_run(model, pb, image_shape, best, attack_lr=attack_lr, iterations=iterations, seed=seed,
                      gradient_scale=gradient_scale, callback=callback)
    return WeightSearch(best=best, values=[float(t.value) for t in trials],
                        iterations=[int(t.user_attrs["iterations"]) for t in trials],
                        stopped=[bool(t.user_attrs["stopped"]) for t in trials],
                        params=[dict(t.params) for t in trials], reconstruction=rec, search_seconds=search_seconds,
                        final_seconds=rec.seconds, unweighted_value=float(unweighted[0]) if unweighted else None,
                        settings=dict(n_trials=n_trials, n_startup_trials=n_startup_trials, iterations=iterations,
                                      trial_iterations=trial_iterations, prune=prune, report_every=report_every,
                                      epochs=epochs, batches=batches, lr=lr, attack_lr=attack_lr, seed=seed,
                                      enqueue_unweighted=enqueue_unweighted, storage=url, study_name=study_name,
                                      gradient_scale=gradient_scale))
