"""Bad input at the public boundary: every public function either raises a clear error or
handles the input correctly.

The public API is ENUMERATED (every function and class defined in a public ``flprivacy``
module, names without a leading underscore), so a new function is covered by default:
``test_every_public_callable_has_a_recipe_or_a_reason`` fails until it gets a valid-call
recipe in :data:`RECIPES` (or a justified entry in :data:`SKIP`). From each valid call the
sweep derives bad calls by rule, from the arguments' names and types:

==================  ====================================================  ===============
mutation            applied to                                            must
==================  ====================================================  ===============
numpy               a tensor argument -> ``tensor.numpy()``               convert or raise
other_dtype         float tensor -> the other of float32 / float64        convert or raise
nan, inf            float tensor -> first entry NaN / +inf                raise
empty               tensor with >1 rows -> zero rows                      raise
wrong_shape         tensor -> one column (or entry) fewer                 raise
negative_seed       ``seed``-like int -> -1                               raise
negative_size       size/count int (n, rounds, steps, ...) -> -5          raise
bad_rate            learning rate-like float -> NaN and -1                raise
unknown_name        a choice string -> "nonexistent"                      raise
no_clients          list of ClientData -> []                              raise
one_sample_clients  every client cut to one sample                        raise or run
too_few_messages    ClientMessages -> its first 2 rounds                  raise or run
missing_file        a ``path`` -> one in a folder that does not exist     raise
corrupt_file        a ``path`` -> a file of bytes no reader accepts       raise
==================  ====================================================  ===============

"raise" means a ValueError/TypeError/KeyError (or DataNotFoundError) whose message names the
argument; "convert" means the result equals the valid call's (within float32 rounding).
Anything else is a *raw error* (an exception from deep inside, or one that does not name the
argument) or a *silent* result. Per-recipe ``accept`` entries say, with a reason, where a
mutated input is legitimately fine.

Run ``python tests/test_bad_inputs.py`` for the counts (clear / handled / raw / silent).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import inspect
import math
import pkgutil
import re
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

import flprivacy

# ---- the public API -------------------------------------------------------------------------------------
PRIVATE_MODULES = ("flbook.experiments",)  # command-line scripts: their arguments are tested in test_reliability
OPTIONAL_MODULES = {"flprivacy.flower": "flwr", "flprivacy.flower_defences": "flwr"}  # module -> the optional extra it needs (pip install flprivacy[flower])


def _available(module: str) -> bool:
    return module not in OPTIONAL_MODULES or importlib.util.find_spec(OPTIONAL_MODULES[module]) is not None


def public_callables() -> dict[str, object]:
    """``{"module.name": obj}`` for every function and class defined in a public flprivacy module."""
    out = {}
    for info in pkgutil.walk_packages(flprivacy.__path__, "flprivacy."):
        name = info.name
        if any(part.startswith("_") and part != "__main__" for part in name.split(".")) or name.startswith(PRIVATE_MODULES):
            continue
        if not _available(name):  # an optional extra that is not installed: its recipes are skipped too
            continue
        mod = importlib.import_module(name)
        for attr, obj in vars(mod).items():
            if attr.startswith("_") or getattr(obj, "__module__", None) != name:
                continue
            if inspect.isfunction(obj) or inspect.isclass(obj):
                out[f"{name.removeprefix('flprivacy.')}.{attr}"] = obj
    return out


SKIP_PREFIXES: dict[str, str] = {
    "lpips.": "LPIPS: its bad inputs (dtype, shape, range, NaN, numpy vs torch, missing or corrupt weights) are "
              "tested in tests/test_lpips.py",
    "tables.": "the table style: its bad arguments are tested in tests/test_tables.py",
    "flower_deploy.": "the multi-process deployment harness: it starts processes, and its failures (missing "
                      "SuperLink, time-outs) are tested in tests/test_flower_deploy.py",
    "attacks.model_inversion.": "FedInverse's model inversion (Wu et al. 2024) and its GAN: shapes, NaN, "
                                "numpy vs torch, bad sizes, classes and missing or corrupt weights are tested in "
                                "tests/test_model_inversion.py",
    "rog.": "ROG's GAN post-processor (Yue et al. 2023): shapes, ranges, NaN, numpy vs torch, bad sizes and "
            "missing or corrupt weights are tested in tests/test_rog.py",
    "ledger.": "the reproduction ledger: its rule functions' bad inputs are tested in tests/test_ledger.py "
               "(test_rules_reject_bad_input); its paper modules' rows() take no input",
}

SKIP: dict[str, str] = {
    "wire.WireModels": "a result container returned by wire.recover_models (its client_messages has a recipe)",
    "wire.eavesdrop_on_the_wire": "the demonstration on a loopback deployment (a SuperLink and SuperNode "
                                  "processes): its valid call runs in tests/test_wire.py (the insecure fixture) and "
                                  "its bad arguments, refused before any process starts, in "
                                  "test_eavesdrop_on_the_wire_refuses_bad_arguments below",
    "flower_defences.AuditGrid": "a Grid wrapper that needs a running ServerApp's Grid; its type checks name "
                                 "the argument, and it runs end to end in tests/test_flower_defences.py",
    "attacks.inversion.LocalTraining": "a description of the client's training, validated where an attack "
                                       "uses it; tests/test_attack_device.py",
    "attacks.inversion.replay_local": "the replay of LocalTraining, checked against torch.optim.SGD in "
                                      "tests/test_attack_device.py; bad-input recipe to write",
    "batched.minibatch_steps": "the mini-batch driver of local_sgd_many and optimum.tuned_local_models, which "
                               "check its inputs (clients, thetas, generators) before calling it",
    # result containers and records: built by the library, not by users from raw input
    **{k: "a result/record container returned by the library" for k in (
        "log.Exchange", "federation.FLRun", "log.ClientMessages", "log.MessageLog", "log.GlobalModels",
        "attacks.reconstruction.LeastSquaresReconstruction", "attacks.reconstruction.SubsetSelection",
        "attacks.learned_mapping.LearnedMappingResult", "attacks.gradient_aia.GradientAIAResult",
        "optimum.LocalOptimum", "optimum.TunedOptimum", "attacks.active.AdamTuning", "attacks.inversion.Reconstruction",
        "metrics.Quality", "threats.GlobalModels", "data.census.FederatedTask", "data.synthetic.SyntheticFederation",
        "data.synthetic.HardInstance", "data.tabular.TabularData", "data.files.RemoteFile")},
    **{k: "an exception or warning class" for k in (
        "data.files.DataNotFoundError", "data.files.ChecksumError", "data.images.DataSourceWarning",
        "validation.NonFiniteError", "validation.DivergenceWarning")},
    "clients.LocalTrainer": "a typing Protocol (no code)",
    "threats.Adversary": "an abstract base class with no arguments",
    "models.LeNet5": "the nn.Module behind lenet5(), which is covered",
    "attacks.learned_mapping.UpdateMapping": "the network G of learned_mapping_reconstruction, which is covered",
    "attacks.gradient_aia.GradientObjective": "the internal objective of gradient_aia, which is covered",
    "attacks.gradient_aia.InputRelaxationObjective": "the internal objective of gradient_aia(relaxation='input'), "
                                                      "which is covered",
    "attacks.gradient_aia.AnalyticInputObjective": "the internal objective of gradient_aia(relaxation='input') for "
                                                    "an MLP, which is covered; it refuses other models and soft samples "
                                                    "(tests/test_gradient_aia_relaxation.py)",
    "attacks.active.adam_step": "one Adam step on a state object; AdamActive and simulate_adam_active check its inputs",
    "plotting.set_style": "figure style, no data arguments",
    "config.project_root": "takes no arguments",
    "ports.free_port": "takes no arguments",
    "models.ResNet9": "the nn.Module behind resnet9(), which its tests cover",
    "flower.quiet_flower": "a context manager around Flower's logger; its only argument is a logging level",
    "plotting.image_grid": "figures; exercised by the notebooks",
    "data.__main__.main": "the data command line (argparse); tested in test_data",
    "data.files.download": "network; test_reliability covers dead mirrors and checksums",
    "data.files.fetch": "network/files; test_data and test_reliability cover it",
    "data.files.reachable": "network",
    "data.files.data_dir": "no arguments (reads FLPRIVACY_DATA_DIR; tested in test_data)",
    "data.files.data_dir_as_variable": "one str argument (its TypeError is tested in test_data)",
    "data.files.DataPathsAsVariable": "no arguments (a context manager; tested in test_data)",
    "data.files.file_digest": "reads a file path; covered through verify/fetch",
    "data.tabular.fetch_acs": "network",
    "data.tabular.load_acs_income": "needs ACS files; test_reliability checks the file validation",
    "data.tabular.validate_acs_file": "a file check; test_reliability feeds it made-up files",
    "data.tabular.load_medical": "no arguments", "data.tabular.acs_dir": "no arguments",
    "config.base_seed": "no arguments (reads FLPRIVACY_SEED; tested in test_config)",
    "config.scale": "no arguments (reads FLPRIVACY_SCALE; tested in test_config)",
    "config.at_scale": "returns one of two values of any type",
    "validation.as_tensor": "the checks themselves (tested in test_reliability)",
    "validation.check_finite": "the checks themselves", "validation.check_positive": "the checks themselves",
    "validation.check_int": "the checks themselves", "validation.check_seed": "the checks themselves",
    "validation.check_choice": "the checks themselves",
    **{k: "a result/record container returned by the library" for k in (
        "diffusion.TrainedDDPM", "diffusion.DDRMResult", "diffusion.MDEResult")},
    "diffusion.ddpm_config": "no arguments", "diffusion.weights_path": "no arguments",
    "diffusion.build_unet": "a config dict for diffusers.UNet2DModel, which validates it",
    "diffusion.scheduler": "diffusers.DDPMScheduler with the paper's fixed schedule",
    "weights.sha256_file": "reads a file path; covered through load_ddpm in test_diffusion",
    "weights.save_weights": "writes a file; covered through save_ddpm/save_rog/save_gan in their tests",
    "weights.load_weights": "missing, corrupt, substituted and pickled files are tested through load_ddpm, "
                            "load_rog, load_gan and the LPIPS loader (test_diffusion, test_rog, test_model_inversion, "
                            "test_lpips)",
    "diffusion.save_ddpm": "writes files; test_diffusion round-trips and corrupts them",
    "diffusion.load_ddpm": "reads files; test_diffusion feeds it corrupt files and pickles",
    "models.SmallCNN": "an nn.Module architecture; built and validated through models.small_cnn",
    "models.ResNet18": "an nn.Module architecture; built and validated through models.resnet18",
    "attacks.awa.Layer": "a record built by attacks.awa.model_layers",
    "attacks.awa_search.WeightSearch": "a result container returned by attacks.awa_search.tune_weights",
}


# ---- fixtures (tiny, cached) --------------------------------------------------------------------------
@functools.cache
def fx() -> dict:
    from flprivacy import ClientData, LocalSGD, curious_client, eavesdrop, lenet5, linear_regression, mlp, run_fedavg
    from flprivacy.data.attributes import SensitiveAttribute

    g = torch.Generator().manual_seed(0)
    lin = linear_regression(3)
    clients = []
    for n in (8, 7, 9):
        X = torch.randn(n, 3, generator=g, dtype=torch.float64)
        X[:, 2] = (torch.rand(n, generator=g) < 0.5).double()
        clients.append(ClientData(X, X @ torch.tensor([1.0, -2.0, 3.0], dtype=torch.float64) + 0.5
                                  + 0.1 * torch.randn(n, generator=g, dtype=torch.float64)))
    run = run_fedavg(lin, clients, rounds=8, local=LocalSGD(lr=0.05), seed=0)
    net = mlp(3, hidden=4, dtype=torch.float64)
    cls_clients = [ClientData(c.X, (c.y > c.y.median()).long()) for c in clients]
    clf = mlp(3, hidden=4, n_outputs=2, loss="cross_entropy", dtype=torch.float64)
    side = 16
    cnn = lenet5(1, 3, image_size=side)
    imgs = torch.rand(2, 1, side, side, generator=g)
    labels = torch.tensor([0, 2])
    img_clients = [ClientData(imgs[:1], labels[:1]), ClientData(imgs[1:], labels[1:])]
    img_run = run_fedavg(cnn, img_clients, rounds=2, local=LocalSGD(lr=0.1, steps=1), seed=0)
    view = curious_client(img_run.log, 0)
    th_cnn = img_run.log.global_models[0]
    upd = th_cnn - img_run.log.global_models[1]
    df_census = None
    from flprivacy.diffusion import build_unet

    unet_config = dict(sample_size=32, in_channels=1, out_channels=1, layers_per_block=1, block_out_channels=(8, 16),
                       norm_num_groups=4, num_class_embeds=11, down_block_types=("DownBlock2D", "DownBlock2D"),
                       up_block_types=("UpBlock2D", "UpBlock2D"))
    torch.manual_seed(0)
    unet = build_unet(unet_config).eval()
    raw28 = torch.rand(2, 1, 28, 28, generator=g)
    from flprivacy.attacks.learned_mapping import learned_mapping_reconstruction_batch

    mapping = learned_mapping_reconstruction_batch([eavesdrop(run.log, 0)], hidden=4, fit_steps=3, decode_steps=3, seed=0)
    return dict(mapping=mapping, unet=unet, unet_config=unet_config, raw28=raw28, lin=lin, clients=clients, run=run, msgs=eavesdrop(run.log, 0), net=net, clf=clf,
                cls_clients=cls_clients, theta=run.theta, theta_net=net.init_params(0), theta_clf=clf.init_params(0),
                attr=SensitiveAttribute.binary(2), cnn=cnn, imgs=imgs, labels=labels, view=view, th_cnn=th_cnn,
                upd=upd, img_run=img_run, side=side, df_census=df_census, LocalSGD=LocalSGD)


@dataclass
class Recipe:
    func: Callable
    kwargs: Callable[[], dict]
    post: Callable | None = None  # e.g. list() for generators
    accept: dict[str, str] = field(default_factory=dict)  # "arg:mutation" or "mutation" -> reason
    compare: bool = True  # compare a converted call's result with the valid call's


def _R(func, post=None, accept=None, compare=True):
    def deco(kw):
        return Recipe(func, kw, post, accept or {}, compare)
    return deco


def recipes() -> dict[str, Recipe]:
    from flprivacy import batched, bounds, config, federation, metrics, models, optimum, threats
    from flprivacy import clients as client_side
    from flprivacy.attacks import active, gradient_aia, inversion, learned_mapping, model_based_aia, reconstruction
    from flprivacy.data import attributes
    from flprivacy.stack import LinearStack
    from flprivacy.data import census, images, splits, synthetic, tabular
    import flprivacy.data as data
    from flprivacy.data import files

    F = fx
    R: dict[str, Recipe] = {}

    def add(key, func, kw, **o):
        R[key] = Recipe(func, kw, **o)

    shape_free = {"wrong_shape": "any shape is valid input", "empty": "any shape is valid input"}
    # federation
    add("clients.n_local_steps", client_side.n_local_steps, lambda: dict(n_samples=10, epochs=2, batch_size=3))
    add("clients.batch_schedule", client_side.batch_schedule, lambda: dict(n_samples=10, epochs=1, batch_size=3),
        post=list)
    add("clients.local_sgd", client_side.local_sgd,
        lambda: dict(model=F()["lin"], theta=F()["theta"], X=F()["clients"][0].X, y=F()["clients"][0].y, lr=0.05))
    add("federation.client_weights", federation.client_weights, lambda: dict(clients=F()["clients"], weighting="size"))
    add("federation.run_fedavg", federation.run_fedavg,
        lambda: dict(model=F()["lin"], clients=F()["clients"], rounds=2, local=F()["LocalSGD"](lr=0.05), seed=0,
                     server_lr=1.0), compare=True)
    add("clients.ClientData", client_side.ClientData, lambda: dict(X=F()["clients"][0].X, y=F()["clients"][0].y),
        accept={"X:other_dtype": "data may be any float dtype (the model casts it)",
                "X:wrong_shape": "a client's data knows no model; run_fedavg checks X against the model",
                "y:other_dtype": "targets may be any float dtype (the loss casts them)"}, compare=False)
    add("clients.LocalSGD", client_side.LocalSGD, lambda: dict(lr=0.1, epochs=1, batch_size=4))
    # models
    add("models.linear_regression", models.linear_regression, lambda: dict(n_features=3), compare=False)
    add("models.logistic_regression", models.logistic_regression, lambda: dict(n_features=3, n_classes=2), compare=False)
    add("models.mlp", models.mlp, lambda: dict(n_features=3, hidden=4, n_outputs=1, loss="mse"), compare=False)
    add("models.lenet5", models.lenet5, lambda: dict(in_channels=1, n_classes=3, image_size=16), compare=False)
    add("models.FLModel", models.FLModel, lambda: dict(module=torch.nn.Linear(3, 1), loss="mse"), compare=False)
    add("models.FLModel.forward", lambda theta, X: F()["net"].forward(theta, X),
        lambda: dict(theta=F()["theta_net"], X=F()["clients"][0].X),
        accept={"X:nan": "a forward pass may evaluate NaN inputs (training and attacks check)",
                "X:inf": "a forward pass may evaluate inf inputs (training and attacks check)",
                "theta:nan": "evaluating a model is not training (training and attacks check)",
                "theta:inf": "evaluating a model is not training (training and attacks check)",
                "X:empty": "zero rows give zero outputs"})
    add("models.FLModel.grad", lambda theta, X, y: F()["net"].grad(theta, X, y),
        lambda: dict(theta=F()["theta_net"], X=F()["clients"][0].X, y=F()["clients"][0].y),
        accept={**{f"{a}:{m}": "a gradient of non-finite input is non-finite; local_sgd and run_fedavg raise"
                   for a in ("theta", "X", "y") for m in ("nan", "inf")}})
    add("models.FLModel.accuracy", lambda theta, X, y: F()["clf"].accuracy(theta, X, y),
        lambda: dict(theta=F()["theta_clf"], X=F()["cls_clients"][0].X, y=F()["cls_clients"][0].y),
        accept={**{f"{a}:{m}": "predictions of a non-finite model/input are its own business"
                   for a in ("theta", "X") for m in ("nan", "inf")}})
    add("models.FLModel.init_params", lambda seed: F()["net"].init_params(seed), lambda: dict(seed=0))
    nonfinite_eval = {f"{a}:{m}": "evaluating a model is not training (training and attacks check)"
                      for a in ("theta", "X", "y") for m in ("nan", "inf")}
    add("models.FLModel.per_sample_loss", lambda theta, X, y: F()["net"].per_sample_loss(theta, X, y),
        lambda: dict(theta=F()["theta_net"], X=F()["clients"][0].X, y=F()["clients"][0].y),
        accept={**nonfinite_eval, "X:empty": "zero rows give zero losses"})
    add("models.FLModel.predict", lambda theta, X: F()["clf"].predict(theta, X),
        lambda: dict(theta=F()["theta_clf"], X=F()["cls_clients"][0].X),
        accept={**nonfinite_eval, "X:empty": "zero rows give zero predictions"})
    add("models.FLModel.to_module", lambda theta: F()["net"].to_module(theta), lambda: dict(theta=F()["theta_net"]),
        accept={"theta:nan": "a module may hold any parameters", "theta:inf": "a module may hold any parameters"},
        compare=False)
    add("federation.MessageLog.client_messages", lambda client: F()["run"].log.client_messages(client),
        lambda: dict(client=1))
    add("federation.MessageLog.exchange", lambda round, client: F()["run"].log.exchange(round, client),
        lambda: dict(round=2, client=1))
    add("threats.GlobalModels.consecutive", lambda t: F()["view"].consecutive(t), lambda: dict(t=0))
    # threats
    add("threats.eavesdrop", threats.eavesdrop, lambda: dict(log=F()["run"].log, client=0))
    add("threats.last_returned", threats.last_returned, lambda: dict(log=F()["run"].log, client=0))
    add("threats.curious_client", threats.curious_client, lambda: dict(log=F()["run"].log, attacker=0))
    add("threats.SendBack", threats.SendBack, lambda: dict(target=0, rounds=[2, 3]), compare=False)
    # bounds
    add("bounds.aia_accuracy_lower_bound", bounds.aia_accuracy_lower_bound, lambda: dict(mse=0.1, theta_s=1.0))
    add("bounds.local_steps", bounds.local_steps, lambda: dict(E=1, S_c=10, B=4))
    add("bounds.lambda_min_W", bounds.lambda_min_W, lambda: dict(eta=0.1, lambda_min_H=1.0, S_c=10, K=2))
    add("bounds.theorem1_bound", bounds.theorem1_bound,
        lambda: dict(eta=0.01, sigma=1.0, d=3, E=1, S_c=10, B=5, n_c=10, lam=0.5, delta=0.1))
    # config
    add("config.env", config.env, lambda: dict(name="FLPRIVACY_NOTHING_SET", default="x"))
    add("config.seed_everything", config.seed_everything, lambda: dict(seed=0))
    add("config.generator", config.generator, lambda: dict(seed=0), compare=False)
    add("config.child_seed", config.child_seed, lambda: dict(seed=0))
    # data
    add("data.load", data.load, lambda: dict(name="digits", n=5))
    add("data.images.load_digits", images.load_digits, lambda: dict(n=5))
    add("data.images.load_mnist", images.load_mnist, lambda: dict(split="test", n=5))
    add("data.images.load_cifar10", images.load_cifar10, lambda: dict(split="test", n=5))
    add("data.splits.train_val_split", splits.train_val_split,
        lambda: dict(X=F()["clients"][0].X, y=F()["clients"][0].y, val_fraction=0.25, seed=0), compare=False,
        accept={"X:nan": "splitting rows does not read values", "X:inf": "splitting rows does not read values",
                "y:nan": "splitting rows does not read values", "y:inf": "splitting rows does not read values",
                "X:other_dtype": "any dtype can be split", "y:other_dtype": "any dtype can be split",
                "X:wrong_shape": "any number of features can be split"})
    add("data.splits.split_iid", splits.split_iid, lambda: dict(n=10, n_clients=3, seed=0))
    add("data.splits.make_clients", splits.make_clients,
        lambda: dict(X=F()["clients"][2].X, y=F()["clients"][2].y, n_clients=2, seed=0), compare=False,
        accept={"X:nan": "splitting rows does not read values", "X:inf": "splitting rows does not read values",
                "y:nan": "splitting rows does not read values", "y:inf": "splitting rows does not read values",
                "X:other_dtype": "any dtype can be split", "y:other_dtype": "any dtype can be split",
                "X:wrong_shape": "any number of features can be split"})
    add("data.synthetic.toy_least_squares", synthetic.toy_least_squares,
        lambda: dict(n_clients=2, n_samples=20, n_uniform=3, seed=0))
    add("data.synthetic.leaf_synthetic", synthetic.leaf_synthetic, lambda: dict(sizes=(20, 30), n_features=4, seed=0))
    add("data.synthetic.nesterov_hard_instance", synthetic.nesterov_hard_instance, lambda: dict(d=4, n_clients=2))
    add("data.tabular.load_adult", tabular.load_adult, lambda: dict(split="test"))
    add("data.tabular.acs_person_file", tabular.acs_person_file, lambda: dict(state="LA", year=2018))
    add("data.tabular.acs_fetch_command", tabular.acs_fetch_command, lambda: dict(states=["LA"]))
    add("data.tabular.encode", tabular.encode,
        lambda: dict(df=__import__("pandas").DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "x"], "t": [0.0, 1, 2]}),
                     target="t", categorical=["b"]))
    add("data.census.medical_task", census.medical_task, lambda: dict(n_clients=2, seed=0), compare=False)
    add("data.census.synthetic_census", census.synthetic_census, lambda: dict(n=200, seed=0))
    add("data.census.occupation_group", census.occupation_group,
        lambda: dict(occp=__import__("pandas").Series([10, 2000, 9900])))
    add("data.census.encode_census", census.encode_census, lambda: dict(df=census.synthetic_census(200, seed=0)),
        compare=False)
    add("data.census.heterogeneity_split", census.heterogeneity_split,
        lambda: dict(y=torch.arange(40.0), is_man=torch.arange(40) % 2 == 0, h=0.4, n_clients=4, seed=0),
        accept={"y:other_dtype": "incomes may be any float dtype"})
    add("data.census.acs_available", census.acs_available, lambda: dict(states=["LA"], announce=False))
    add("data.census.income_l_task", census.income_l_task,
        lambda: dict(h=0.4, source="synthetic", n_clients=4, seed=0, n_synthetic=400), compare=False)
    add("data.census.income_a_task", census.income_a_task,
        lambda: dict(fraction=0.5, source="synthetic", seed=0, n_synthetic=3000), compare=False)
    add("data.census.encode_census_reduced", census.encode_census_reduced,
        lambda: dict(df=census.synthetic_census(200, seed=0)), compare=False)
    from flprivacy import defences
    add("defences.DPLocalSGD", defences.DPLocalSGD,
        lambda: dict(lr=0.1, max_grad_norm=1.0, target_epsilon=1.0, target_delta=1e-5, total_rounds=3, epochs=1,
                     batch_size=4, accountant="rdp"))
    add("data.splits.xu_adult_split", splits.xu_adult_split,
        lambda: dict(df=__import__("pandas").DataFrame({"education": ["Doctorate", "Masters", "Bachelors"] * 5,
                                                      "age": list(range(30, 45))}), n_clients=4, seed=0))
    add("defences.dp_sgd_many", defences.dp_sgd_many,
        lambda: dict(stack=LinearStack(F()["lin"]), thetas=F()["theta"].expand(2, -1).clone(), data=F()["clients"][0],
                     dp=defences.DPLocalSGD(lr=0.1, max_grad_norm=1.0, target_epsilon=1.0, target_delta=1e-5,
                                            total_rounds=3, epochs=1, batch_size=4, accountant="rdp"),
                     generator=torch.Generator().manual_seed(0)))
    add("data.files.verify", files.verify, lambda: dict(path=Path(__file__), checksum=""),
        accept={"path:missing_file": "an empty checksum checks nothing (fetch reads the file)",
                "path:corrupt_file": "an empty checksum checks nothing (fetch reads the file)"})
    # reconstruction
    msgs = lambda: F()["msgs"]  # noqa: E731
    add("attacks.reconstruction.design_matrices", reconstruction.design_matrices, lambda: dict(messages=msgs()),
        accept={"too_few_messages": "design matrices of any number of rounds are well defined"})
    add("attacks.reconstruction.condition_number", reconstruction.condition_number,
        lambda: dict(matrix=torch.tensor([[2.0, 0.0], [0.0, 1.0]], dtype=torch.float64)),
        accept={"matrix:wrong_shape": "any matrix has a condition number"})
    add("attacks.reconstruction.condition_numbers", reconstruction.condition_numbers,
        lambda: dict(theta_out=reconstruction.design_matrices(msgs())[1], subsets=torch.tensor([[0, 1, 2, 3, 4]])),
        accept={"subsets:wrong_shape": "subsets of any size have condition numbers",
                "theta_out:wrong_shape": "a matrix of any width has condition numbers",
                "theta_out:other_dtype": "a float32 copy holds rounded values, so its (large) condition numbers differ"})
    add("attacks.reconstruction.reconstruct_least_squares", reconstruction.reconstruct_least_squares,
        lambda: dict(messages=msgs(), subset="all"))
    add("attacks.reconstruction.select_messages", reconstruction.select_messages,
        lambda: dict(messages=msgs(), restarts=1, seed=0))
    add("attacks.reconstruction.random_subset_search", reconstruction.random_subset_search,
        lambda: dict(messages=msgs(), n_subsets=50, seed=0, batch_size=20))
    add("attacks.learned_mapping.learned_mapping_reconstruction", learned_mapping.learned_mapping_reconstruction,
        lambda: dict(messages=msgs(), hidden=4, fit_steps=3, decode_steps=3, seed=0),
        accept={"too_few_messages": "Algo. 3 runs on any number >= 2 of messages"}, compare=False)
    add("attacks.learned_mapping.learned_mapping_reconstruction_batch",
        learned_mapping.learned_mapping_reconstruction_batch,
        lambda: dict(messages=[msgs()], hidden=4, fit_steps=3, decode_steps=3, seed=0), compare=False)
    add("attacks.learned_mapping.update_span", learned_mapping.update_span,
        lambda: dict(messages=[msgs()], rtol=1e-2))
    add("attacks.learned_mapping.decode_mapping", learned_mapping.decode_mapping,
        lambda: dict(results=F()["mapping"], steps=3, lr=1e-2, theta_init=msgs().sent[:1].clone(),
                     basis=learned_mapping.update_span([msgs()]), checkpoints=(1,)),
        accept={"basis:wrong_shape": "a basis of fewer directions is a smaller span, still a valid restriction"})
    add("attacks.learned_mapping.follow_mapping", learned_mapping.follow_mapping,
        lambda: dict(results=F()["mapping"], steps=3, alpha=0.5, theta_init=msgs().sent[:1].clone(), checkpoints=(1,)))
    # inference
    Xa, ya = (lambda: F()["clients"][0].X), (lambda: F()["clients"][0].y)
    add("data.attributes.SensitiveAttribute", attributes.SensitiveAttribute,
        lambda: dict(columns=(2,), candidates=torch.tensor([[0.0], [1.0]])), compare=False,
        accept={"candidates:other_dtype": "candidates are stored in float64",
                "candidates:nan": "checked when used", "candidates:inf": "checked when used"})
    add("attacks.model_based_aia.candidate_losses", model_based_aia.candidate_losses,
        lambda: dict(model=F()["lin"], theta=F()["theta"], X=Xa(), y=ya(), attribute=F()["attr"]))
    add("attacks.model_based_aia.model_based_aia", model_based_aia.model_based_aia,
        lambda: dict(model=F()["lin"], theta=F()["theta"], X=Xa(), y=ya(), sensitive_columns=[2],
                     candidates=torch.tensor([[0.0], [1.0]])))
    add("attacks.model_based_aia.model_based_accuracy", model_based_aia.model_based_accuracy,
        lambda: dict(model=F()["lin"], theta=F()["theta"], X=Xa(), y=ya(), attribute=F()["attr"]))
    add("attacks.model_based_aia.aia_accuracy", model_based_aia.aia_accuracy,
        lambda: dict(predicted=torch.tensor([0, 1, 1]), true_index=torch.tensor([0, 1, 0])))
    add("attacks.model_based_aia.two_step_decoder", model_based_aia.two_step_decoder,
        lambda: dict(theta=F()["theta"], X=Xa(), y=ya(), column=2))
    add("attacks.gradient_aia.first_rounds_sets", gradient_aia.first_rounds_sets, lambda: dict(rounds=[0, 1, 2, 3]))
    add("attacks.gradient_aia.gradient_aia", gradient_aia.gradient_aia,
        lambda: dict(model=F()["lin"], messages=msgs(), X=Xa(), y=ya(), attribute=F()["attr"], iterations=2,
                     learning_rates=(100.0,), seed=0, relaxation="mixture", sampler="softmax"),
        accept={"too_few_messages": "the gradient-based AIA runs on any number >= 1 of messages"})
    add("optimum.optimal_local_model", optimum.optimal_local_model,
        lambda: dict(model=F()["lin"], X=Xa(), y=ya(), starts=F()["theta"], max_steps=4, pilot_steps=2,
                     check_every=2), compare=False)
    add("optimum.tuned_local_models", optimum.tuned_local_models,
        lambda: dict(model=F()["lin"], clients=F()["clients"], epochs=1, batch_size=4, n_trials=2, batch=2, seed=0),
        compare=False)
    add("optimum.tuned_local_models (DP oracle)", optimum.tuned_local_models,
        lambda: dict(model=F()["lin"], clients=F()["clients"], epochs=1, batch_size=4, n_trials=2, batch=2, seed=0,
                     dp=defences.DPLocalSGD(lr=0.1, max_grad_norm=1.0, target_epsilon=1.0, target_delta=1e-5,
                                            total_rounds=3, epochs=1, batch_size=4), noise_multiplier=0.5),
        compare=False)
    add("defences.clipped_grad_sum", defences.clipped_grad_sum,
        lambda: dict(stack=LinearStack(F()["lin"]), thetas=F()["theta"].expand(2, -1).clone(), X=F()["clients"][0].X,
                     y=F()["clients"][0].y, max_grad_norm=1.0))
    add("optimum.optimal_local_models", optimum.optimal_local_models,
        lambda: dict(model=F()["lin"], datasets=[(Xa(), ya())], starts=[F()["theta"]], max_steps=4, pilot_steps=2,
                     check_every=2), compare=False)
    # active
    add("attacks.active.AdamActive", active.AdamActive, lambda: dict(targets=[0], start_round=2, n_rounds=2, lr=0.5),
        compare=False)
    add("attacks.active.SendBackAll", active.SendBackAll, lambda: dict(targets=[0], rounds=[2, 3]), compare=False)
    add("stack.LinearStack", LinearStack, lambda: dict(model=F()["lin"]))
    add("config.server_generator", config.server_generator, lambda: dict(seed=0))
    add("models.design", models.design, lambda: dict(X=F()["clients"][0].X),
        accept={"wrong_shape": "any number of features is a valid design"})
    add("clients.LeastSquaresSGD", client_side.LeastSquaresSGD, lambda: dict(lr=0.05, epochs=1, batch_size=8))
    add("optimum.least_squares_optimum", optimum.least_squares_optimum, lambda: dict(data=F()["clients"][0]))
    add("optimum.regularised_optimum", optimum.regularised_optimum,
        lambda: dict(model=F()["lin"], data=F()["clients"][0], l2=1e-3, iterations=5))
    add("config.client_generator", config.client_generator, lambda: dict(seed=0, client=1))
    add("batched.supports", batched.supports, lambda: dict(model=F()["lin"]))
    add("clients.check_clients", client_side.check_clients, lambda: dict(clients=F()["clients"], where="test"))
    add("batched.local_sgd_many", batched.local_sgd_many,
        lambda: dict(stack=LinearStack(F()["lin"]), thetas=[F()["theta"].expand(2, -1).clone() for _ in range(3)],
                     clients=F()["clients"], local=F()["LocalSGD"](lr=0.05),
                     gens=[config.generator(c) for c in range(3)]))
    add("attacks.active.simulate_adam_active", active.simulate_adam_active,
        lambda: dict(model=F()["lin"], clients=F()["clients"], starts=[F()["theta"]] * 3,
                     local=F()["LocalSGD"](lr=0.05), n_rounds=2, lr=torch.tensor([0.1, 0.2]),
                     beta1=torch.tensor([0.9, 0.8]), beta2=torch.tensor([0.99, 0.9]), seed=0))
    add("attacks.active.tune_adam_active", active.tune_adam_active,
        lambda: dict(model=F()["lin"], clients=F()["clients"], starts=[F()["theta"]] * 3,
                     local=F()["LocalSGD"](lr=0.05), n_rounds=2, n_trials=2, batch=2, seed=0), compare=False)
    add("attacks.active.tune_adam_active_per_client", active.tune_adam_active_per_client,
        lambda: dict(model=F()["lin"], clients=F()["clients"], starts=[F()["theta"]] * 3,
                     local=F()["LocalSGD"](lr=0.05), n_rounds=2, n_trials=2, batch=2, seed=0), compare=False)
    # inversion
    cnn, side = (lambda: F()["cnn"]), (lambda: F()["side"])
    add("attacks.inversion.dlg_init", inversion.dlg_init, lambda: dict(model=cnn(), seed=0, scale=0.5))
    add("attacks.inversion.dummy_latent", inversion.dummy_latent,
        lambda: dict(n=2, image_shape=(1, side(), side()), scale_factor=4, init="uniform"), compare=False)
    add("attacks.inversion.decode_dummy", inversion.decode_dummy,
        lambda: dict(latent=torch.rand(2, 1, 4, 4), image_shape=(1, side(), side())),
        accept={"latent:nan": "decoding is interpolation; invert_update checks its objective",
                "latent:inf": "decoding is interpolation; invert_update checks its objective"})
    add("attacks.inversion.total_variation", inversion.total_variation, lambda: dict(images=F()["imgs"]),
        accept={**shape_free, "images:nan": "a measure of its input", "images:inf": "a measure of its input"})
    add("attacks.inversion.last_layer", inversion.last_layer, lambda: dict(model=cnn(), vector=F()["upd"]),
        accept={"vector:nan": "slicing a vector", "vector:inf": "slicing a vector"})
    add("attacks.inversion.idlg_label", inversion.idlg_label, lambda: dict(model=cnn(), update=F()["upd"]))
    add("attacks.inversion.restore_label_counts", inversion.restore_label_counts,
        lambda: dict(model=cnn(), theta=F()["th_cnn"], update=F()["upd"], n_images=2, lr=0.1, steps=1,
                     probe=F()["imgs"]))
    add("attacks.inversion.labels_from_counts", inversion.labels_from_counts, lambda: dict(counts=torch.tensor([1, 0, 2])),
        accept={"counts:wrong_shape": "any number of classes"})
    add("attacks.inversion.replay_update", inversion.replay_update,
        lambda: dict(model=cnn(), theta=F()["th_cnn"], X=F()["imgs"], y=F()["labels"], lr=0.1, steps=1))
    add("attacks.inversion.update_distance", inversion.update_distance,
        lambda: dict(pred=F()["upd"], target=F()["upd"] * 0.9, kind="l2"))
    add("attacks.inversion.invert_update", inversion.invert_update,
        lambda: dict(model=cnn(), theta=F()["th_cnn"], target=F()["upd"], image_shape=(1, side(), side()),
                     labels=F()["labels"], lr=0.1, steps=1, iterations=2, seed=0), compare=False,
        accept={"labels:wrong_shape": "the labels define how many images are reconstructed"})
    add("attacks.inversion.curious_client_attack", inversion.curious_client_attack,
        lambda: dict(model=cnn(), view=F()["view"], t=0, image_shape=(1, side(), side()), local_lr=0.1,
                     local_steps=1, labels=F()["labels"], iterations=2, scale_factor=4, seed=0), compare=False)
    add("attacks.inversion.own_image_score", inversion.own_image_score,
        lambda: dict(reconstruction=inversion.Reconstruction(F()["imgs"], F()["labels"], [0.0], 0.0),
                     own_images=F()["imgs"][:1]))
    add("attacks.inversion.super_client_divergence", inversion.super_client_divergence,
        lambda: dict(model=F()["clf"], theta=F()["theta_clf"],
                     clients=[(c.X, c.y) for c in F()["cls_clients"]], lr=0.1, steps=2))
    add("attacks.inversion.jacobian_gradient_covariance", inversion.jacobian_gradient_covariance,
        lambda: dict(model=F()["clf"], theta=F()["theta_clf"], X=F()["cls_clients"][0].X, y=F()["cls_clients"][0].y))
    add("attacks.inversion.lemma1_prediction", inversion.lemma1_prediction,
        lambda: dict(cov=torch.ones(3), lr=0.1, steps=3, n_clients=4, n_images=8),
        accept={"cov:nan": "a closed-form scaling of its input", "cov:inf": "a closed-form scaling of its input",
                **shape_free})
    # AWA (Song et al. 2025) and the models with BatchNorm
    from flprivacy.attacks import awa, awa_search

    add("models.small_cnn", models.small_cnn, lambda: dict(in_channels=3, n_classes=4, image_size=8, width=4),
        compare=False)
    add("models.resnet18", models.resnet18, lambda: dict(in_channels=3, n_classes=10), compare=False)
    add("models.resnet9", models.resnet9, lambda: dict(in_channels=1, n_classes=10, batchnorm=False), compare=False)
    A = awa_fx
    add("attacks.awa.Scenario", awa.Scenario, lambda: dict(epochs=2, batches=2), compare=False)
    add("attacks.awa.AWAWeights", awa.AWAWeights,
        lambda: dict(q_cv=2.0, q_bn=3.0, q_fc=4.0, q_en=5.0, p_mean=0.25, p_var=0.5), compare=False)
    add("attacks.awa.client_update", awa.client_update,
        lambda: dict(model=A()["m"], theta=A()["th"], X=A()["X"], y=A()["y"], lr=0.1, epochs=2, batches=2, seed=0))
    add("attacks.awa.replay", awa.replay,
        lambda: dict(model=A()["m"], theta=A()["th"], X=A()["X"], y=A()["y"], lr=0.1, batches=2, epochs=1))
    add("attacks.awa.replay_gap", awa.replay_gap,
        lambda: dict(model=A()["m"], theta=A()["th"], X=A()["X"], y=A()["y"], lr=0.1, epochs=2, batches=2, seed=0))
    add("attacks.awa.interpolate", awa.interpolate, lambda: dict(theta=A()["th"], theta_next=A()["thn"], epochs=2))
    add("attacks.awa.model_layers", awa.model_layers, lambda: dict(model=A()["m"]), compare=False)
    add("attacks.awa.linear_weights", awa.linear_weights,
        lambda: dict(layers=A()["layers"], q_cv=3.0, q_bn=2.0, q_fc=5.0))
    add("attacks.awa.enhanced_layers", awa.enhanced_layers,
        lambda: dict(pred=A()["upd"] * 0.5, target=A()["upd"], layers=A()["layers"], p_mean=0.5, p_var=0.5))
    add("attacks.awa.layer_weights", awa.layer_weights,
        lambda: dict(pred=A()["upd"] * 0.5, target=A()["upd"], layers=A()["layers"],
                     Q=awa.AWAWeights(2.0, 3.0, 4.0, 9.0, 0.5, 0.5)))
    add("attacks.awa.weighted_distance", awa.weighted_distance,
        lambda: dict(pred=A()["upd"] * 0.5, target=A()["upd"], layers=A()["layers"],
                     weights=torch.arange(1.0, len(A()["layers"]) + 1)))
    attack_kw = lambda: dict(model=A()["m"], theta=A()["th"], theta_next=A()["thn"], labels=A()["y"],  # noqa: E731
                             image_shape=(3, 8, 8), lr=0.1, epochs=2, batches=2, attack_lr=0.1, iterations=2, seed=0)
    n_images = {"labels:wrong_shape": "the labels define how many images are reconstructed"}
    add("attacks.awa.awa_attack", awa.awa_attack,
        lambda: dict(attack_kw(), Q=awa.AWAWeights(2.0, 3.0, 4.0, 9.0, 0.5, 0.5), gradient_scale=True), compare=False,
        accept=n_images)
    add("attacks.awa.agic_attack", awa.agic_attack, attack_kw, compare=False, accept=n_images)
    add("attacks.awa.dlg_attack", awa.dlg_attack, lambda: dict(attack_kw(), epochs=1), compare=False,
        accept=n_images)
    add("attacks.awa_search.tune_weights", awa_search.tune_weights,
        lambda: dict(attack_kw(), n_trials=2, n_startup_trials=1, trial_iterations=1, gradient_scale=True), compare=False,
        accept=n_images)
    # metrics
    a, b = (lambda: F()["imgs"]), (lambda: (F()["imgs"] * 0.9 + 0.05))
    add("metrics.mse", metrics.mse, lambda: dict(x=a(), y=b()))
    add("metrics.psnr", metrics.psnr, lambda: dict(x=a(), y=b()))
    add("metrics.ssim", metrics.ssim, lambda: dict(x=a(), y=b()))
    add("metrics.match_images", metrics.match_images, lambda: dict(reconstructions=b(), truth=a()),
        accept={"reconstructions:empty": "", "truth:empty": ""} and {})
    add("metrics.quality", metrics.quality, lambda: dict(reconstructions=b(), truth=a()))
    # diffusion post-processing (tiny untrained U-Net; the algorithms' properties are in test_diffusion)
    from flprivacy import diffusion

    unet, raw28 = (lambda: F()["unet"]), (lambda: F()["raw28"])
    add("diffusion.to_model_space", diffusion.to_model_space, lambda: dict(images=raw28()))
    add("diffusion.from_model_space", diffusion.from_model_space, lambda: dict(x=torch.rand(2, 1, 32, 32) * 2 - 1))
    add("diffusion.train_ddpm", diffusion.train_ddpm,
        lambda: dict(images=raw28(), labels=torch.tensor([1, 2]), steps=2, batch_size=2, lr=1e-3, seed=0,
                     config=F()["unet_config"]))
    add("diffusion.bicubic_matrix", diffusion.bicubic_matrix, lambda: dict(low=4, high=8))
    add("diffusion.SeparableOperator", diffusion.SeparableOperator,
        lambda: dict(A=diffusion.bicubic_matrix(4, 8).T.contiguous()),
        accept={"A:wrong_shape": "any full-row-rank (m, n) matrix with m <= n is an operator"})
    add("diffusion.upsampler_operator", diffusion.upsampler_operator, lambda: dict(low=14, high=28, pad=2))
    add("diffusion.ddrm_restore", diffusion.ddrm_restore,
        lambda: dict(model=unet(), raw=raw28(), sigma_y=0.1, labels=torch.tensor([1, 2]), n_steps=2, eta=0.85,
                     seed=0))
    add("diffusion.estimate_sigma_y", diffusion.estimate_sigma_y, lambda: dict(raw=raw28(), truth=raw28() * 0.9))
    add("diffusion.ddim_sample", diffusion.ddim_sample,
        lambda: dict(model=unet(), x_T=torch.randn(2, 1, 32, 32, generator=torch.Generator().manual_seed(0)),
                     labels=torch.tensor([1, 2]), n_steps=2))
    add("diffusion.simulate_raw", diffusion.simulate_raw, lambda: dict(truth=raw28(), low=14, sigma_y=0.1, seed=0))
    add("diffusion.lpips_digits", diffusion.lpips_digits, lambda: dict(images=raw28(), truth=raw28() * 0.9))
    add("diffusion.mde", diffusion.mde,
        lambda: dict(model=unet(), raw=raw28(), labels=torch.tensor([1, 2]), iterations=2, lr=0.05, n_steps=2,
                     seed=0))
    # the wire eavesdropper: a fabricated recording (a request and its response) and recovered models
    from flprivacy import wire

    http = (b"POST /api/v0/fleet/pull-messages HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc")

    def capture() -> wire.Capture:
        return wire.Capture([{"up": bytearray(http[0]), "down": bytearray(http[1])}])

    def found() -> wire.WireModels:
        th = F()["theta"]
        return wire.WireModels(down=[(0, th), (1, th + 1)], up=[(0, th - 1), (1, th)], http_messages=2, objects=4)

    add("relay.Capture", wire.Capture, lambda: dict(connections=capture().connections), compare=False)
    add("relay.Relay", wire.Relay, lambda: dict(target_port=8080, target_host="127.0.0.1"), compare=False)
    add("wire.http_messages", wire.http_messages, lambda: dict(data=http[0] + http[1]))
    add("wire.WireModels.client_messages", lambda client: found().client_messages(client), lambda: dict(client=0))
    # the Flower adapter (optional extra)
    if _available("flprivacy.flower"):
        from flprivacy import flower

        def capp():
            return flower.client_app(F()["lin"], F()["clients"], F()["LocalSGD"](lr=0.05))

        add("flower.to_arrays", flower.to_arrays, lambda: dict(model=F()["lin"], theta=F()["theta"]), compare=False)
        add("flower.from_arrays", flower.from_arrays,
            lambda: dict(model=F()["lin"], arrays=flower.to_arrays(F()["lin"], F()["theta"])))
        add("flower.client_app", flower.client_app,
            lambda: dict(model=F()["lin"], clients=F()["clients"], local=F()["LocalSGD"](lr=0.05), seed=0,
                         weighting="size"), compare=False)
        add("flower.server_app", flower.server_app,
            lambda: dict(model=F()["lin"], n_samples=[8, 7, 9], rounds=2, theta0=F()["theta"], weighting="size"),
            compare=False)
        add("flower.InProcessGrid", flower.InProcessGrid, lambda: dict(app=capp(), n_nodes=3, seed=0), compare=False)
        add("flower.RecordingStrategy", flower.RecordingStrategy,
            lambda: dict(model=F()["lin"], log=F()["run"].log, node_to_client={11: 0, 12: 1, 13: 2}), compare=False)
        add("flower.run_flower", flower.run_flower,
            lambda: dict(model=F()["lin"], clients=F()["clients"], rounds=2, local=F()["LocalSGD"](lr=0.05), seed=0,
                         weighting="size"), compare=True)
        # the audit path: a tiny audited app run in this process (flower_fx)
        from flwr.serverapp.strategy import FedAvg

        W = flower_fx
        add("flower.copy_module", flower.copy_module, lambda: dict(module=W()["net"]()), compare=False)
        add("flower.attack_model", flower.attack_model,
            lambda: dict(module=W()["net"](), loss="cross_entropy", reading="train"),
            post=lambda m: m.forward(W()["theta"], W()["x"]))

        def running(running_mean, running_var):
            return flower.attack_model(W()["net"](), reading="running",
                                       buffers={"1.running_mean": running_mean, "1.running_var": running_var})

        add("flower.attack_model.buffers", running, lambda: dict(running_mean=W()["mean"], running_var=W()["var"]),
            post=lambda m: m.forward(W()["theta"], W()["x"]))
        add("flower.AuditLog", flower.AuditLog, lambda: dict(module=W()["net"](), loss="cross_entropy"), compare=False)
        add("flower.AuditLog.buffers", lambda round, client: W()["record"].buffers(round, client),
            lambda: dict(round=1, client=0))
        add("flower.AuditLog.attack_model",
            lambda reading, round, client: W()["record"].attack_model(reading, round, client),
            lambda: dict(reading="running", round=1, client=1), post=lambda m: m.forward(W()["theta"], W()["x"]))
        add("flower.AuditLog.save", lambda path: W()["record"].save(path),
            lambda: dict(path=W()["folder"] / "audit-copy.safetensors"), compare=False,
            accept={"path:corrupt_file": "saving replaces whatever the file held"})
        add("flower.AuditLog.load", lambda path, module: flower.AuditLog.load(path, module),
            lambda: dict(path=W()["folder"] / "audit.safetensors", module=W()["net"]()),
            post=lambda r: r.message_log().global_trajectory())
        add("flower.AuditStrategy", flower.AuditStrategy,
            lambda: dict(inner=FedAvg(), record=flower.AuditLog(W()["net"]())), compare=False)
        add("flower.audit", flower.audit, lambda: dict(strategy=FedAvg(), module=W()["net"](), loss="cross_entropy"),
            compare=False)
        add("flower.save_log", flower.save_log,
            lambda: dict(log=F()["run"].log, path=W()["folder"] / "log-copy.safetensors"), compare=False,
            accept={"path:corrupt_file": "saving replaces whatever the file held"})
        add("flower.load_log", flower.load_log, lambda: dict(path=W()["folder"] / "log.safetensors"),
            post=lambda log: log.global_trajectory())
        add("flower.run_server_app", flower.run_server_app,
            lambda: dict(app=flower.server_app(F()["lin"], [8, 7, 9], rounds=2, theta0=F()["theta"])[0],
                         grid=flower.InProcessGrid(capp(), 3, seed=0), run_config={}, run_id=1), compare=False)
        add("wire.recover_models", wire.recover_models,
            lambda: dict(capture=capture(), model=F()["lin"], key="arrays"), compare=False)
    return R


@functools.cache
def awa_fx() -> dict:
    from flprivacy.attacks import awa
    from flprivacy.models import small_cnn

    g = torch.Generator().manual_seed(0)
    m = small_cnn(3, 4, 8, width=4)
    X, y = torch.rand(4, 3, 8, 8, generator=g), torch.tensor([0, 1, 2, 3])
    th = m.init_params(0)
    thn, _ = awa.client_update(m, th, X, y, lr=0.1, epochs=2, batches=2, seed=0)
    return dict(m=m, X=X, y=y, th=th, thn=thn, upd=th - thn, layers=awa.model_layers(m))


@functools.cache
def flower_fx() -> dict:
    """A tiny audited Flower app (a BatchNorm MLP, two nodes, two rounds) run in this process:
    its record, saved with the fixture run's MessageLog in a folder removed at exit."""
    import atexit
    import shutil
    import tempfile

    from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.serverapp import Grid, ServerApp
    from flwr.serverapp.strategy import FedAvg

    from flprivacy import flower

    def net() -> torch.nn.Module:
        with torch.random.fork_rng():  # the same initial weights every time, the global stream untouched
            torch.manual_seed(0)
            return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(),
                                       torch.nn.Linear(4, 2))

    g = torch.Generator().manual_seed(0)
    X, y = torch.randn(8, 3, generator=g), torch.tensor([0, 1] * 4)
    client = ClientApp()

    @client.train()
    def train(msg: Message, context: Context) -> Message:
        m = net()
        m.load_state_dict(msg.content["arrays"].to_torch_state_dict())
        c = context.node_config["partition-id"]
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        m.train()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(m(X[4 * c:4 * c + 4]), y[4 * c:4 * c + 4]).backward()
        opt.step()
        return Message(content=RecordDict({"arrays": ArrayRecord(m.state_dict()),
                                           "metrics": MetricRecord({"num-examples": 4})}), reply_to=msg)

    server, box = ServerApp(), {}

    @server.main()
    def main(grid: Grid, context: Context) -> None:
        box["strategy"] = s = flower.audit(FedAvg(fraction_evaluate=0.0), net())
        s.start(grid=grid, initial_arrays=ArrayRecord(net().state_dict()), num_rounds=2,
                train_config=ConfigRecord({"lr": 0.1}))

    with flower.quiet_flower():
        flower.run_server_app(server, flower.InProcessGrid(client, 2))
    record = box["strategy"].record
    folder = Path(tempfile.mkdtemp(prefix="flprivacy-bad-inputs-"))
    atexit.register(shutil.rmtree, folder, True)
    record.save(folder / "audit.safetensors")
    flower.save_log(fx()["run"].log, folder / "log.safetensors")
    bufs = record.buffers(1)
    return dict(net=net, record=record, folder=folder, mean=bufs["1.running_mean"], var=bufs["1.running_var"],
                x=torch.randn(5, 3, generator=g), theta=record.globals[1])


# ---- mutations --------------------------------------------------------------------------------------------
SEED_NAMES = {"seed"}
SIZE_NAMES = {"n", "n_samples", "epochs", "batch_size", "steps", "rounds", "n_clients", "n_images", "n_rounds",
              "n_subsets", "n_trials", "batch", "iterations", "fit_steps", "decode_steps", "hidden", "n_features",
              "n_classes", "n_outputs", "in_channels", "image_size", "E", "S_c", "B", "K", "d", "n_c", "max_steps",
              "pilot_steps", "check_every", "chunk", "n_uniform", "restarts", "local_steps", "n_synthetic",
              "n_rounds", "start_round", "target", "client", "attacker", "column", "t", "scale_factor", "round",
              "n_nodes", "clients_per_round", "low", "target_port", "run_id"}
RATE_NAMES = {"lr", "eta", "server_lr", "local_lr", "fit_lr", "decode_lr", "attack_lr", "val_fraction", "h", "sigma",
              "lam", "delta", "scale", "fraction", "noise_std", "mse", "temperature", "data_range",
              "rtol", "sigma_y", "noise_multiplier", "max_grad_norm"}
CHOICE_NAMES = {"weighting", "loss", "split", "kind", "distance", "optimizer", "init", "subset", "method", "name",
                "state", "source", "occupation", "decode_optimizer", "on_singular", "target", "relaxation",
                "sampler", "reading"}
PATH_NAMES = {"path"}


@functools.cache
def _scratch() -> Path:
    """A folder for the path mutations (removed at exit)."""
    import atexit
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="flprivacy-bad-paths-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def _corrupt_file() -> Path:
    """A new file of bytes that no reader of the library accepts."""
    path = _scratch() / f"corrupt-{len(list(_scratch().iterdir()))}.safetensors"
    path.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00not a file of its kind")
    return path


def _mutations(name: str, value):
    from flprivacy import ClientData
    from flprivacy.federation import ClientMessages

    if isinstance(value, torch.Tensor):
        v = value.detach()
        yield "numpy", v.numpy(), "convert"
        if v.is_floating_point():
            yield "other_dtype", v.to(torch.float32 if v.dtype == torch.float64 else torch.float64), "convert"
            for kind, bad in (("nan", math.nan), ("inf", math.inf)):
                w = v.clone()
                w.view(-1)[0] = bad
                yield kind, w, "raise"
        if v.ndim >= 1 and v.shape[0] > 1:
            yield "empty", v[:0], "raise"
        if v.ndim >= 2:
            yield "wrong_shape", v[..., :-1], "raise"
        elif v.ndim == 1 and v.numel() > 1:
            yield "wrong_shape", v[:-1], "raise"
    elif isinstance(value, bool):
        return
    elif isinstance(value, int):
        if name in SEED_NAMES:
            yield "negative_seed", -1, "raise"
        elif name in SIZE_NAMES:
            yield "negative_size", -5, "raise"
    elif isinstance(value, float):
        if name in RATE_NAMES:
            yield "bad_rate", math.nan, "raise"
            yield "bad_rate", -1.0, "raise"
    elif name in PATH_NAMES and isinstance(value, (str, Path)):
        yield "missing_file", _scratch() / "no such folder" / Path(value).name, "raise"
        yield "corrupt_file", _corrupt_file(), "raise"
    elif isinstance(value, str):
        if name in CHOICE_NAMES:
            yield "unknown_name", "nonexistent", "raise"
    elif isinstance(value, list) and value and all(isinstance(c, ClientData) for c in value):
        yield "no_clients", [], "raise"
        yield "one_sample_clients", [ClientData(c.X[:1], c.y[:1]) for c in value], "either"
    elif isinstance(value, ClientMessages):
        yield "too_few_messages", value.select(slice(0, 2)), "raise"


# ---- classification ---------------------------------------------------------------------------------------
CLEAR_TYPES = (ValueError, TypeError, KeyError, LookupError, FileNotFoundError)
ALIASES = {"theta": ("θ",), "messages": ("Θ_out", "rounds", "message"), "matrix": ("Θ_out",),
           "theta_out": ("Θ_out",), "clients": ("client",), "sensitive_columns": ("sensitive",),
           "counts": ("count",)}


def names_argument(msg: str, arg: str) -> bool:
    for token in (arg, *ALIASES.get(arg, ())):
        if re.search(rf"(?<![A-Za-z0-9_]){re.escape(token)}(?![A-Za-z0-9_])", msg):
            return True
    return False


def _close(a, b) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.shape != b.shape:
            return False
        if not a.is_floating_point() and not b.is_floating_point():
            return bool(torch.equal(a, b))
        return bool(torch.allclose(a.double(), b.double(), rtol=1e-3, atol=1e-5))
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-3, abs_tol=1e-6)
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return all(_close(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
                   if "second" not in f.name and "time" not in f.name)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    return True  # other objects (models, logs, studies): not compared


def _finite(x) -> bool:
    if isinstance(x, torch.Tensor):
        return not x.is_floating_point() or bool(torch.isfinite(x).all())
    if isinstance(x, float):
        return not math.isnan(x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return all(_finite(getattr(x, f.name)) for f in dataclasses.fields(x))
    if isinstance(x, (list, tuple)):
        return all(_finite(y) for y in x)
    return True


@dataclass
class Case:
    recipe: str
    arg: str
    mutation: str
    outcome: str  # clear | handled | raw | silent | accepted
    detail: str = ""


def _call(r: Recipe, kw: dict):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = r.func(**kw)
        return r.post(out) if r.post else out


def sweep(only: set[str] | None = None) -> tuple[list[Case], list[str]]:
    cases, broken = [], []
    for key, r in recipes().items():
        if only and key not in only:
            continue
        try:
            base_kw = r.kwargs()
            base = _call(r, base_kw)
        except Exception as e:  # the valid call itself fails (e.g. a data file is absent)
            broken.append(f"{key}: {type(e).__name__}: {str(e)[:100]}")
            continue
        for arg, value in base_kw.items():
            for mutation, bad, want in _mutations(arg, value):
                acc = r.accept.get(f"{arg}:{mutation}") or r.accept.get(mutation)
                kw = dict(r.kwargs())
                kw[arg] = bad
                try:
                    out = _call(r, kw)
                except CLEAR_TYPES as e:
                    ok = names_argument(str(e), arg)
                    cases.append(Case(key, arg, mutation, "clear" if ok else "raw", f"{type(e).__name__}: {e}"[:200]))
                    continue
                except Exception as e:  # noqa: BLE001
                    cases.append(Case(key, arg, mutation, "raw", f"{type(e).__name__}: {e}"[:200]))
                    continue
                if acc is not None:
                    cases.append(Case(key, arg, mutation, "accepted", acc))
                elif want == "raise":
                    cases.append(Case(key, arg, mutation, "silent", f"returned {type(out).__name__}"))
                elif want == "convert":
                    good = (not r.compare) or _close(out, base)
                    cases.append(Case(key, arg, mutation, "handled" if good and _finite(out) else "silent",
                                      "" if good else "result differs from the valid call's"))
                else:  # either
                    cases.append(Case(key, arg, mutation, "handled" if _finite(out) else "silent", ""))
    return cases, broken


def counts(cases: list[Case]) -> dict[str, int]:
    out = {k: 0 for k in ("clear", "handled", "accepted", "raw", "silent")}
    for c in cases:
        out[c.outcome] += 1
    return out


# ---- tests -----------------------------------------------------------------------------------------------
def test_every_public_callable_has_a_recipe_or_a_reason():
    api = public_callables()
    covered = set(recipes()) | set(SKIP)
    missing = sorted(k for k in api if k not in covered and not k.startswith(tuple(SKIP_PREFIXES)))
    assert not missing, (f"public callables without a bad-input recipe or a SKIP reason: {missing}. Add a valid call "
                         "to recipes() in tests/test_bad_inputs.py (the sweep then derives the bad ones), or a "
                         "justified SKIP entry.")
    stale = sorted(k for k in SKIP if k not in api and _available("flprivacy." + k.rsplit(".", 1)[0]))
    assert not stale, f"SKIP names callables that no longer exist: {stale}"
    assert all(reason for reason in SKIP.values())


@pytest.fixture(scope="module")
def swept():
    return sweep()


def test_no_bad_input_passes_silently(swept):
    cases, _ = swept
    silent = [f"{c.recipe}({c.arg}: {c.mutation}) {c.detail}" for c in cases if c.outcome == "silent"]
    assert not silent, "bad input returned a result silently:\n" + "\n".join(silent)


def test_no_bad_input_raises_a_raw_error(swept):
    cases, _ = swept
    raw = [f"{c.recipe}({c.arg}: {c.mutation}) -> {c.detail}" for c in cases if c.outcome == "raw"]
    assert not raw, "bad input raised an error that does not name the argument:\n" + "\n".join(raw)


def test_the_sweep_ran_on_most_recipes(swept):
    cases, broken = swept
    # only a data loader whose file is absent from FLPRIVACY_DATA_DIR may fail its valid call
    assert all("DataNotFoundError" in b for b in broken), broken
    assert len({c.recipe for c in cases}) >= 70 and len(cases) >= 300


# ---- arguments the sweep does not mutate: objects of the Flower audit path and the wire ----------------
def _wrong_objects() -> list[tuple[str, Callable[[], object], str]]:
    """(label, a call with one wrong argument, that argument's name)."""
    from flprivacy import wire

    F = fx
    out = [
        ("Capture(connections=str)", lambda: wire.Capture("bytes"), "connections"),
        ("Capture(connections=[str])", lambda: wire.Capture(["bytes"]), "connections"),
        ("Relay(target_port=70000)", lambda: wire.Relay(70000), "target_port"),
        ("Relay(target_port=str)", lambda: wire.Relay("8080"), "target_port"),
        ("Relay(target_host=None)", lambda: wire.Relay(8080, None), "target_host"),
        ("http_messages(data=str)", lambda: wire.http_messages("POST / HTTP/1.1\r\n\r\n"), "data"),
        ("WireModels.client_messages(client=str)",
         lambda: wire.WireModels([(0, F()["theta"])], [(0, F()["theta"])], 2, 2).client_messages("0"), "client"),
    ]
    if not _available("flprivacy.flower"):
        return out
    from flwr.serverapp.strategy import FedAvg

    from flprivacy import flower

    W = flower_fx
    out += [
        ("recover_models(capture=bytes)", lambda: wire.recover_models(b"", F()["lin"]), "capture"),
        ("recover_models(model=nn.Module)", lambda: wire.recover_models(wire.Capture(), W()["net"]()), "model"),
        ("recover_models(key=int)", lambda: wire.recover_models(wire.Capture(), F()["lin"], key=0), "key"),
        ("copy_module(module=FLModel)", lambda: flower.copy_module(F()["lin"]), "module"),
        ("attack_model(module=FLModel)", lambda: flower.attack_model(F()["lin"]), "module"),
        ("attack_model(buffers=list)", lambda: flower.attack_model(W()["net"](), reading="running", buffers=[]),
         "buffers"),
        ("attack_model(buffers without the variance)",
         lambda: flower.attack_model(W()["net"](), reading="running", buffers={"1.running_mean": W()["mean"]}),
         "buffers"),
        ("attack_model(negative running_var)",
         lambda: flower.attack_model(W()["net"](), reading="running",
                                     buffers={"1.running_mean": W()["mean"], "1.running_var": -W()["var"]}),
         "running_var"),
        ("AuditLog(module=FLModel)", lambda: flower.AuditLog(F()["lin"]), "module"),
        ("AuditLog.buffers(round past the record)", lambda: W()["record"].buffers(9), "round"),
        ("AuditLog.buffers(client never recorded)", lambda: W()["record"].buffers(0, 7), "client"),
        ("AuditLog.load(module of another architecture)",
         lambda: flower.AuditLog.load(W()["folder"] / "audit.safetensors", torch.nn.Linear(3, 2)), "module"),
        ("AuditLog.load(path=a MessageLog file)",
         lambda: flower.AuditLog.load(W()["folder"] / "log.safetensors", W()["net"]()), "path"),
        ("AuditLog.save(path=int)", lambda: W()["record"].save(3), "path"),
        ("AuditStrategy(inner=FLModel)", lambda: flower.AuditStrategy(F()["lin"], flower.AuditLog(W()["net"]())),
         "inner"),
        ("AuditStrategy(record=MessageLog)", lambda: flower.AuditStrategy(FedAvg(), F()["run"].log), "record"),
        ("audit(strategy=AuditLog)", lambda: flower.audit(flower.AuditLog(W()["net"]()), W()["net"]()), "strategy"),
        ("audit(module=FLModel)", lambda: flower.audit(FedAvg(), F()["lin"]), "module"),
        ("save_log(log=AuditLog)", lambda: flower.save_log(W()["record"], W()["folder"] / "x.safetensors"), "log"),
        ("load_log(path=an AuditLog file)", lambda: flower.load_log(W()["folder"] / "audit.safetensors"), "path"),
        ("load_log(path=None)", lambda: flower.load_log(None), "path"),
        ("run_server_app(app=ClientApp)", lambda: flower.run_server_app(
            flower.client_app(F()["lin"], F()["clients"], F()["LocalSGD"](lr=0.05)),
            flower.InProcessGrid(flower.client_app(F()["lin"], F()["clients"], F()["LocalSGD"](lr=0.05)), 3)), "app"),
        ("run_server_app(run_config=list)", lambda: flower.run_server_app(
            flower.server_app(F()["lin"], [8, 7, 9], rounds=1, theta0=F()["theta"])[0],
            flower.InProcessGrid(flower.client_app(F()["lin"], F()["clients"], F()["LocalSGD"](lr=0.05)), 3),
            run_config=[]), "run_config"),
    ]
    return out


@pytest.mark.parametrize("label", [label for label, _, _ in _wrong_objects()])
def test_flower_audit_and_wire_objects_of_the_wrong_kind_are_refused(label):
    """Arguments the sweep's rules do not reach (modules, strategies, records, captures, paths to
    the wrong kind of file) are refused with an error naming the argument."""
    call, arg = next((c, a) for lab, c, a in _wrong_objects() if lab == label)
    with pytest.raises(CLEAR_TYPES) as e:
        call()
    assert names_argument(str(e.value), arg), f"{label}: the error does not name {arg}: {e.value}"


@pytest.mark.parametrize("kw, arg", [(dict(secure=False, rounds=0), "rounds"), (dict(secure=False, seed=-1), "seed"),
                                     (dict(secure=False, timeout=math.nan), "timeout"), (dict(secure="no"), "secure")])
def test_eavesdrop_on_the_wire_refuses_bad_arguments(kw, arg):
    """The demonstration checks its arguments before it starts any process."""
    from flprivacy.wire import eavesdrop_on_the_wire

    with pytest.raises(CLEAR_TYPES) as e:
        eavesdrop_on_the_wire(**kw)
    assert names_argument(str(e.value), arg), str(e.value)


def test_http_parser_stops_at_malformed_messages():
    """A recording that stops being HTTP (a chunk size or length that is not a number, a body
    that does not decompress as its header says) ends the parse; the messages before it stand."""
    from flprivacy.wire import http_messages

    good = b"POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
    for bad in (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nxy\r\n0\r\n\r\n",
                b"HTTP/1.1 200 OK\r\nContent-Length: three\r\n\r\nabc",
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Encoding: gzip\r\n\r\nabc"):
        assert [(m[0], m[2]) for m in http_messages(good + bad + good)] == [("POST /a HTTP/1.1", b"abc")]


if __name__ == "__main__":
    cs, br = sweep()
    print(counts(cs), f"{len(cs)} cases on {len({c.recipe for c in cs})} callables")
    for c in cs:
        if c.outcome in ("raw", "silent") or "-v" in sys.argv:
            print(f"{c.outcome:8s} {c.recipe}({c.arg}: {c.mutation}) {c.detail[:150]}")
    for b in br:
        print("BROKEN  ", b)
