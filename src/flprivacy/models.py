"""Models as functions of a flat parameter vector.

Federated learning exchanges *models*, and every attack in the book reads models as vectors
θ ∈ R^d (Diana et al. 2025, §2.1; Xu & Neglia 2021, §2). :class:`FLModel` wraps a
``torch.nn.Module`` (the architecture) and a per-sample loss, and evaluates both at any flat
θ through ``torch.func.functional_call``. Gradients with respect to θ, and with respect to
the inputs through θ (second order, for gradient inversion), are plain autograd.

Factories give the four model families the papers use: linear least squares, logistic
regression, a one-hidden-layer MLP (Diana et al.: 128 ReLU units) and LeNet-5.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .validation import as_tensor, check_int, check_seed

LossName = Literal["mse", "cross_entropy", "bce"]


def _per_sample_loss(name: str) -> Callable[[Tensor, Tensor], Tensor]:
    if name == "mse":
        # ℓ(θ, x, y) = (f_θ(x) - y)^2, so the local risk is ||Xθ - y||^2 / S_c (Diana eq. 8).
        return lambda out, y: ((out - y.to(out.dtype).reshape(out.shape)) ** 2).reshape(out.shape[0], -1).sum(1)
    if name == "cross_entropy":
        # y: class indices (long) or class probabilities (float, shape (n, C)).
        return lambda out, y: F.cross_entropy(out, y, reduction="none")
    if name == "bce":
        return lambda out, y: F.binary_cross_entropy_with_logits(
            out.reshape(-1), y.to(out.dtype).reshape(-1), reduction="none")
    raise ValueError(f"unknown loss {name!r}; use one of 'mse', 'cross_entropy', 'bce'.")


class FLModel:
    """An architecture evaluated at flat parameter vectors.

    Args:
        module: the architecture; its own parameters serve only as the template for shapes,
            dtype and initialisation. It must not hold buffers that training changes:
            BatchNorm layers must be built with ``track_running_stats=False`` (see below).
        loss: per-sample loss, ``"mse"`` (least squares), ``"cross_entropy"`` or ``"bce"``.

    **BatchNorm.** The exchanged vector θ holds parameters only. A BatchNorm layer with
    ``track_running_stats=False`` has no running statistics: it normalises every batch with
    that batch's own mean and variance, in training and evaluation alike. This is exactly
    what a FedAvg client does during local training (``module.train()``: batch statistics,
    Song et al. 2025, §5 with ResNet-18), and what an attacker replays; the BatchNorm scale and
    shift are ordinary parameters in θ. The price: predictions (:meth:`predict`,
    :meth:`accuracy`) also use the statistics of the batch they are given, so evaluate on
    batches of reasonable size. Modules with running statistics are refused with this advice
    (:func:`resnet18` and :func:`small_cnn` are built this way).

    Attributes:
        dim: number of parameters d.
        dtype: parameter dtype; inputs are cast to it.
    """

    def __init__(self, module: nn.Module, loss: LossName):
        self.module = module.eval()
        self.loss_name: str = loss
        self._loss = _per_sample_loss(loss)
        self._names = [n for n, _ in module.named_parameters()]
        self._shapes = [p.shape for _, p in module.named_parameters()]
        self._numels = [p.numel() for _, p in module.named_parameters()]
        self.dim: int = sum(self._numels)
        self.dtype: torch.dtype = next(module.parameters()).dtype
        if any(b.numel() for b in module.buffers()):
            raise ValueError(
                "FLModel does not support modules with buffers (e.g. BatchNorm running statistics), "
                "because they are not part of the exchanged vector θ; build BatchNorm layers with "
                "track_running_stats=False (batch statistics, as a client in training mode uses) or use a "
                "model without buffers."
            )

    def __repr__(self) -> str:
        return f"FLModel({self.module.__class__.__name__}, d={self.dim}, loss={self.loss_name!r})"

    # ---- conversion between θ and modules -------------------------------------------------
    def unflatten(self, theta: Tensor) -> dict[str, Tensor]:
        """Split θ (shape ``(d,)``) into named parameter views (a NumPy θ, or one of another
        floating dtype, is converted to the model's dtype)."""
        theta = self._as_theta(theta)
        return {n: t.view(s) for n, t, s in zip(self._names, theta.split(self._numels), self._shapes)}

    def flatten(self, module: nn.Module | None = None) -> Tensor:
        """Flat copy of ``module``'s parameters (default: the template module)."""
        m = self.module if module is None else module
        return torch.cat([p.detach().reshape(-1) for p in m.parameters()]).clone()

    def to_module(self, theta: Tensor) -> nn.Module:
        """A fresh copy of the architecture with parameters θ (for Opacus, inspection, ...)."""
        m = copy.deepcopy(self.module)
        with torch.no_grad():
            for p, v in zip(m.parameters(), self.unflatten(self._as_theta(theta).detach()).values()):
                p.copy_(v)
        return m

    def init_params(self, seed: int = 0) -> Tensor:
        """θ^0: the module's default initialisation drawn under ``seed`` (global RNG untouched).

        The draw seeds torch's global generator inside ``torch.random.fork_rng``, so it is not
        safe to call from several threads at once (their draws interleave): hold a lock, as
        :func:`flprivacy.flower_deploy.deploy` does, or draw θ^0 once and pass it on."""
        check_seed("seed", seed, "init_params")
        m = copy.deepcopy(self.module)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            for sub in m.modules():  # the root too: for linear models it *is* the nn.Linear
                if hasattr(sub, "reset_parameters"):
                    sub.reset_parameters()
        return self.flatten(m)

    # ---- evaluation -----------------------------------------------------------------------
    def forward(self, theta: Tensor, X: Tensor) -> Tensor:
        """Model output f_θ(X)."""
        X = as_tensor("X", X, where="FLModel.forward", dtype=self.dtype)
        params = self.unflatten(theta)
        try:
            return torch.func.functional_call(self.module, params, (X,))
        except RuntimeError as e:
            if "shape" not in str(e) and "size" not in str(e):
                raise
            raise ValueError(
                f"X of shape {tuple(X.shape)} does not fit the model {self!r}: {self.input_hint()} "
                f"(torch: {str(e).splitlines()[0]})."
            ) from None

    def input_hint(self) -> str:
        """What the model's inputs must look like, for error messages."""
        for m in self.module.modules():
            if isinstance(m, nn.Linear):
                return f"expected X of shape (n, {m.in_features})"
            if isinstance(m, nn.Conv2d):
                side = getattr(self.module, "image_size", None)
                return (f"expected images X of shape (n, {m.in_channels}, H, W)"
                        + (f" with H = W = {side}" if side else ""))
        return "see the model's architecture"

    def per_sample_loss(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        """ℓ(θ, x_i, y_i) for every row, shape ``(n,)``."""
        y = self._as_targets(y, X)
        return self._loss(self.forward(theta, X), y)

    def loss(self, theta: Tensor, X: Tensor, y: Tensor) -> Tensor:
        """Empirical risk (1/n) Σ_i ℓ(θ, x_i, y_i) (Diana eq. 1, inner sum)."""
        return self.per_sample_loss(theta, X, y).mean()

    def grad(self, theta: Tensor, X: Tensor, y: Tensor, create_graph: bool = False) -> Tensor:
        """∇_θ of :meth:`loss`. With ``create_graph`` the result stays differentiable (in θ and
        in ``X`` if ``X`` requires grad)."""
        theta = self._as_theta(theta)
        if not theta.requires_grad:
            theta = theta.detach().requires_grad_(True)
        (g,) = torch.autograd.grad(self.loss(theta, X, y), theta, create_graph=create_graph)
        return g

    @torch.no_grad()
    def predict(self, theta: Tensor, X: Tensor) -> Tensor:
        """Predictions: regression values, or class indices for classification losses."""
        out = self.forward(theta, X)
        if self.loss_name == "cross_entropy":
            return out.argmax(-1)
        if self.loss_name == "bce":
            return (out.squeeze(-1) > 0).long()
        return out.squeeze(-1)

    @torch.no_grad()
    def accuracy(self, theta: Tensor, X: Tensor, y: Tensor) -> float:
        """Fraction of correct predictions (classification losses only)."""
        if self.loss_name == "mse":
            raise ValueError("accuracy() needs a classification model; this one has loss 'mse'.")
        y = self._as_targets(y, X)
        pred = self.predict(theta, X)
        if y.shape != pred.shape:
            raise ValueError(f"accuracy: y must hold one label per row of X, shape {tuple(pred.shape)}; "
                             f"got {tuple(y.shape)}.")
        return (pred == y).double().mean().item()

    def _as_targets(self, y: Tensor, X: Tensor) -> Tensor:
        """``y`` as a tensor with one entry per row of ``X``: class indices ``(n,)`` (a column
        ``(n, 1)`` is flattened), regression targets, or class probabilities ``(n, C)``."""
        y = as_tensor("y", y, where="FLModel")
        n = X.shape[0] if hasattr(X, "shape") and len(X.shape) else None
        if y.ndim == 0 or (n is not None and y.shape[0] != n):
            raise ValueError(f"y must have one entry per row of X ({n} rows); got shape {tuple(y.shape)}.")
        if y.ndim == 2 and y.shape[1] == 1 and (self.loss_name != "cross_entropy" or not y.dtype.is_floating_point):
            y = y.reshape(-1)
        if self.loss_name == "cross_entropy" and not y.dtype.is_floating_point and y.ndim != 1:
            raise ValueError(f"class labels y must have shape (n,); got {tuple(y.shape)}.")
        return y

    def _as_theta(self, theta: Tensor, name: str = "theta") -> Tensor:
        """θ as a flat tensor of the model's dtype (NumPy converted; float32 on a float64 model cast)."""
        theta = as_tensor(name, theta, where="FLModel")
        if theta.dtype != self.dtype:
            if not theta.dtype.is_floating_point:
                raise TypeError(f"{name} must be a floating-point parameter vector of dtype {self.dtype}; got "
                                f"{theta.dtype}.")
            theta = theta.to(self.dtype)
        self._check_theta(theta, name)
        return theta

    def _check_theta(self, theta: Tensor, name: str = "theta") -> None:
        if not isinstance(theta, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor of shape ({self.dim},); got {type(theta).__name__}.")
        if theta.ndim != 1 or theta.numel() != self.dim:
            raise ValueError(
                f"{name}: expected a flat parameter vector of shape ({self.dim},), got {tuple(theta.shape)}; "
                "use FLModel.flatten() to turn a module into θ."
            )


def design(X: Tensor) -> Tensor:
    """The design matrix [X, 1] of least squares, intercept column last, matching the parameter
    order θ = (w, b) of :func:`linear_regression` (Diana et al. eq. 8)."""
    X = as_tensor("X", X, where="design", ndim=2, min_rows=1)
    if not bool(torch.isfinite(X).all()):
        raise ValueError("design: X holds NaN or inf; the design matrix of least squares needs finite features.")
    return torch.cat([X, torch.ones(X.shape[0], 1, dtype=X.dtype)], dim=1)


# ---- factories ------------------------------------------------------------------------------
def linear_regression(n_features: int, bias: bool = True, dtype: torch.dtype = torch.float64) -> FLModel:
    """Least-squares linear regression f_θ(x) = wᵀx + b, d = n_features + 1 with bias.

    The parameter order is ``[w_1..w_n, b]``, i.e. θ = (w, b), matching a design matrix whose
    last column is the intercept. float64 by default: exact-recovery checks need it.
    """
    check_int("n_features", n_features, "linear_regression", minimum=1)
    return FLModel(nn.Linear(n_features, 1, bias=bias, dtype=dtype), "mse")


def logistic_regression(n_features: int, n_classes: int = 2, dtype: torch.dtype = torch.float32) -> FLModel:
    """Multinomial logistic regression (softmax over ``n_classes`` logits), cross-entropy loss."""
    check_int("n_features", n_features, "logistic_regression", minimum=1)
    check_int("n_classes", n_classes, "logistic_regression", minimum=2)
    return FLModel(nn.Linear(n_features, n_classes, dtype=dtype), "cross_entropy")


def mlp(
    n_features: int,
    hidden: int = 128,
    n_outputs: int = 1,
    loss: LossName = "mse",
    dtype: torch.dtype = torch.float32,
) -> FLModel:
    """One hidden layer of ``hidden`` ReLU units (Diana et al. 2025, §5.2: 128 units)."""
    for name, v in (("n_features", n_features), ("hidden", hidden), ("n_outputs", n_outputs)):
        check_int(name, v, "mlp", minimum=1)
    net = nn.Sequential(
        nn.Linear(n_features, hidden, dtype=dtype), nn.ReLU(), nn.Linear(hidden, n_outputs, dtype=dtype)
    )
    return FLModel(net, loss)


class LeNet5(nn.Module):
    """LeNet-5 (LeCun et al. 1998): two 5x5 convolutions with pooling, three dense layers.

    ``activation`` defaults to the sigmoid, which is twice differentiable everywhere, as
    gradient-inversion attacks need (Zhu et al. 2019 use sigmoid LeNets for the same reason).
    """

    def __init__(self, in_channels: int = 1, n_classes: int = 10, image_size: int = 28,
                 activation: type[nn.Module] = nn.Sigmoid):
        super().__init__()
        self.image_size = int(image_size)
        pad = 2 if image_size == 28 else 0  # 28x28 MNIST is padded to LeNet's native 32x32
        side = ((image_size + 2 * pad - 4) // 2 - 4) // 2
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 6, 5, padding=pad), activation(), nn.AvgPool2d(2),
            nn.Conv2d(6, 16, 5), activation(), nn.AvgPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(16 * side * side, 120), activation(),
            nn.Linear(120, 84), activation(), nn.Linear(84, n_classes),
        )

    def forward(self, x: Tensor) -> Tensor:
        """Class logits of a batch of images ``(n, C, H, W)``."""
        return self.classifier(self.features(x))


def lenet5(in_channels: int = 1, n_classes: int = 10, image_size: int = 28,
           activation: type[nn.Module] = nn.Sigmoid) -> FLModel:
    """LeNet-5 image classifier with cross-entropy loss (inputs ``(n, C, H, W)``)."""
    for name, v in (("in_channels", in_channels), ("n_classes", n_classes), ("image_size", image_size)):
        check_int(name, v, "lenet5", minimum=1)
    if ((image_size + 2 * (2 if image_size == 28 else 0) - 4) // 2 - 4) // 2 < 1:
        raise ValueError(f"lenet5: image_size={image_size} is too small for two 5x5 convolutions and poolings; use >= 16.")
    return FLModel(LeNet5(in_channels, n_classes, image_size, activation), "cross_entropy")


# ---- models with BatchNorm (Song et al. 2025) ------------------------------------------------------
def _bn(channels: int, dtype: torch.dtype) -> nn.BatchNorm2d:
    """BatchNorm with batch statistics only (no running buffers; see :class:`FLModel`)."""
    return nn.BatchNorm2d(channels, track_running_stats=False, dtype=dtype)


class SmallCNN(nn.Module):
    """Three 3x3 convolutions, each followed by BatchNorm (batch statistics) and an activation,
    then one dense layer: the quick-scale stand-in for ResNet-18 (3 conv, 3 BN, 1 FC layers).
    ``batchnorm=False`` replaces the BatchNorm layers by identities (an ablation)."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10, image_size: int = 32, width: int = 16,
                 activation: type[nn.Module] = nn.Sigmoid, dtype: torch.dtype = torch.float32,
                 batchnorm: bool = True):
        super().__init__()
        self.image_size = int(image_size)
        if not batchnorm:
            def _bn(c: int, dtype: torch.dtype) -> nn.Module:  # noqa: F811 - the ablation without BatchNorm
                return nn.Identity()
        else:
            _bn = globals()["_bn"]
        side = (image_size + 1) // 2
        side = (side + 1) // 2
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, width, 3, padding=1, dtype=dtype), _bn(width, dtype), activation(),
            nn.Conv2d(width, 2 * width, 3, stride=2, padding=1, dtype=dtype), _bn(2 * width, dtype), activation(),
            nn.Conv2d(2 * width, 2 * width, 3, stride=2, padding=1, dtype=dtype), _bn(2 * width, dtype), activation(),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(2 * width * side * side, n_classes, dtype=dtype))

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.features(x))


def small_cnn(in_channels: int = 3, n_classes: int = 10, image_size: int = 32, width: int = 16,
              activation: type[nn.Module] = nn.Sigmoid, batchnorm: bool = True) -> FLModel:
    """:class:`SmallCNN` with cross-entropy loss: a quick-scale CNN with BatchNorm layers.

    The sigmoid default is twice differentiable everywhere, which update-matching attacks need
    (their objective differentiates the replayed gradient once more); pass ``nn.ReLU`` for the
    ResNet-style activation."""
    for name, v in (("in_channels", in_channels), ("n_classes", n_classes), ("image_size", image_size),
                    ("width", width)):
        check_int(name, v, "small_cnn", minimum=1)
    if image_size < 4:
        raise ValueError(f"small_cnn: image_size must be >= 4 (two stride-2 convolutions); got {image_size}.")
    return FLModel(SmallCNN(in_channels, n_classes, image_size, width, activation, batchnorm=bool(batchnorm)),
                   "cross_entropy")


class _BasicBlock(nn.Module):
    """ResNet basic block (He et al. 2016): two 3x3 conv + BN, identity or 1x1 conv + BN shortcut."""

    def __init__(self, cin: int, cout: int, stride: int, dtype: torch.dtype,
                 act: Callable[[Tensor], Tensor] = F.relu):
        super().__init__()
        self.act = act
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False, dtype=dtype)
        self.bn1 = _bn(cout, dtype)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False, dtype=dtype)
        self.bn2 = _bn(cout, dtype)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False, dtype=dtype), _bn(cout, dtype))

    def forward(self, x: Tensor) -> Tensor:
        out = self.act(self.bn1(self.conv1(x)))
        return self.act(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet18(nn.Module):
    """ResNet-18 for 32x32 inputs (the CIFAR variant: 3x3 stem, no max-pooling; He et al. 2016),
    the model of Song et al. 2025 (§5): 20 convolutions, 20 BatchNorm layers, 1 dense layer,
    about 11.2 million parameters. ``activation`` replaces ReLU (e.g. ``torch.sigmoid``, as in
    the ResNet of Zhu et al.'s DLG code)."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10, dtype: torch.dtype = torch.float32,
                 activation: Callable[[Tensor], Tensor] = F.relu):
        super().__init__()
        self.image_size = 32
        self.act = activation
        self.conv1 = nn.Conv2d(in_channels, 64, 3, 1, 1, bias=False, dtype=dtype)
        self.bn1 = _bn(64, dtype)
        blocks, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            blocks += [_BasicBlock(cin, cout, stride, dtype, activation), _BasicBlock(cout, cout, 1, dtype, activation)]
            cin = cout
        self.layers = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, n_classes, dtype=dtype)

    def forward(self, x: Tensor) -> Tensor:
        out = self.layers(self.act(self.bn1(self.conv1(x))))
        return self.fc(F.adaptive_avg_pool2d(out, 1).flatten(1))


def resnet18(in_channels: int = 3, n_classes: int = 10) -> FLModel:
    """:class:`ResNet18` with cross-entropy loss (inputs ``(n, C, 32, 32)``; BatchNorm with
    batch statistics, see :class:`FLModel`)."""
    check_int("in_channels", in_channels, "resnet18", minimum=1)
    check_int("n_classes", n_classes, "resnet18", minimum=2)
    return FLModel(ResNet18(in_channels, n_classes), "cross_entropy")


def _without_batchnorm(module: nn.Module) -> nn.Module:
    """``module`` with every BatchNorm layer replaced by the identity, in place (the ResNets of
    Wilson et al.'s code have no normalisation layers)."""
    for name, child in list(module.named_children()):
        if isinstance(child, nn.modules.batchnorm._BatchNorm):
            setattr(module, name, nn.Identity())
        else:
            _without_batchnorm(child)
    return module


class ResNet9(ResNet18):
    """ResNet-9: :class:`ResNet18` with one basic block per stage instead of two (He et al. 2016's
    basic-block ResNet with stage depths [1, 1, 1, 1]), the "ResNet9" of Wilson et al. 2025 (Fig. 5,
    App. H Fig. 22). The paper names only "ResNet (He et al., 2016)"; the stage depths are those of
    the authors' code (``ResNet9 = ResNet(BasicBlock, [1, 1, 1, 1])``, github.com/ethanowilson/curiousclient,
    ``networks/resnet.py``). The stem (3x3, stride 1), BatchNorm and the global average pooling are
    :class:`ResNet18`'s; the authors' code instead has a 7x7 stride-2 stem, no BatchNorm, an 8x8
    average pooling and a bias-free dense layer. ``batchnorm=False`` removes the BatchNorm layers
    (identities instead), as in the authors' code.

    Parameters: a stem convolution and BatchNorm, four basic blocks (two 3x3 convolutions and two
    BatchNorm layers each, a 1x1 convolution and BatchNorm on the shortcut of stages 2-4), one
    dense layer: 4,903,242 for 3 input channels and 10 classes (4,897,482 without BatchNorm)."""

    def __init__(self, in_channels: int = 3, n_classes: int = 10, dtype: torch.dtype = torch.float32,
                 activation: Callable[[Tensor], Tensor] = F.relu, batchnorm: bool = True):
        super().__init__(in_channels, n_classes, dtype, activation)
        blocks, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            blocks.append(_BasicBlock(cin, cout, stride, dtype, activation))
            cin = cout
        self.layers = nn.Sequential(*blocks)  # replaces ResNet-18's two blocks per stage, same place in θ
        if not batchnorm:
            _without_batchnorm(self)


def resnet9(in_channels: int = 3, n_classes: int = 10, batchnorm: bool = True) -> FLModel:
    """:class:`ResNet9` with cross-entropy loss (inputs ``(n, C, H, W)``, e.g. 28x28 MNIST or
    32x32 CIFAR; BatchNorm with batch statistics, see :class:`FLModel`; ``batchnorm=False``: none,
    as in Wilson et al.'s code)."""
    check_int("in_channels", in_channels, "resnet9", minimum=1)
    check_int("n_classes", n_classes, "resnet9", minimum=2)
    if not isinstance(batchnorm, bool):
        raise TypeError(f"resnet9: batchnorm must be True or False, got {batchnorm!r}.")
    return FLModel(ResNet9(in_channels, n_classes, batchnorm=batchnorm), "cross_entropy")
