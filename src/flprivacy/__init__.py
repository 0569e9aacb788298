"""flprivacy: the library behind the book *Privacy attacks on federated learning, executed*.

Modules (named for what they hold):

- :mod:`flprivacy.config`        scale switch (``FLPRIVACY_SCALE``), seeds and seed streams, the project root
- :mod:`flprivacy.validation`    argument checks with clear errors; non-finite and divergence checks
- :mod:`flprivacy.models`        models as functions of a flat parameter vector θ
- :mod:`flprivacy.stack`         many parameter vectors of a linear-layer model evaluated at once
- :mod:`flprivacy.clients`       a client's data and her local update (Algorithm 2)
- :mod:`flprivacy.federation`    FedAvg's server loop (Algorithm 1) over those clients
- :mod:`flprivacy.batched`       the same local training for all clients at once
- :mod:`flprivacy.log`           the message log: what was sent and returned, with its write API
- :mod:`flprivacy.threats`       what each adversary sees: eavesdropper, active server, curious client
- :mod:`flprivacy.optimum`       a client's local optimum: closed form, regularised, Model-w-O
- :mod:`flprivacy.data`          data sets, synthetic generators, client splits, sensitive attributes
- :mod:`flprivacy.attacks`       the attacks, one module per family
- :mod:`flprivacy.defences`      federated DP-SGD through Opacus
- :mod:`flprivacy.bounds`        the papers' analytic bounds
- :mod:`flprivacy.metrics`       image and reconstruction quality (SSIM, PSNR)
- :mod:`flprivacy.lpips`         the LPIPS perceptual distance, offline
- :mod:`flprivacy.diffusion`     the diffusion prior and DDRM post-processing (Wilson et al. §4)
- :mod:`flprivacy.flower`        the federation on Flower, recorded; :mod:`flprivacy.flower_deploy` a loopback deployment
- :mod:`flbook.ledger`        the reproduction ledger: every paper result, its rule and its verdict
- :mod:`flbook.experiments`   the committed commands behind the result files
- :mod:`flprivacy.tables`        the book's table style
- :mod:`flprivacy.plotting`      the book's figure style
"""

from .config import at_scale, base_seed, child_seed, scale, seed_everything
from .federation import ClientData, FLRun, LocalSGD, local_sgd, run_fedavg
from .log import ClientMessages, MessageLog
from .models import FLModel, lenet5, linear_regression, logistic_regression, mlp
from .threats import Adversary, SendBack, curious_client, eavesdrop, last_returned

__version__ = "0.3.0"

__all__ = [
    "Adversary", "ClientData", "ClientMessages", "FLModel", "FLRun", "LocalSGD", "MessageLog", "SendBack",
    "at_scale", "base_seed", "child_seed", "curious_client", "eavesdrop", "last_returned", "lenet5", "linear_regression", "local_sgd",
    "logistic_regression", "mlp", "run_fedavg", "scale", "seed_everything",
]
