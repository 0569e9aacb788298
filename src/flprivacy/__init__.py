"""flprivacy: the library behind the book *Privacy attacks on federated learning, executed*.

Modules (named for what they hold):

- :mod:`flprivacy.config`     scale switch (``FLPRIVACY_SCALE``) and seeding
- :mod:`flprivacy.models`     models as functions of a flat parameter vector θ
- :mod:`flprivacy.federation` FedAvg (Algorithms 1-2) and its message log
- :mod:`flprivacy.threats`    what each adversary sees: eavesdropper, active server, curious client
- :mod:`flprivacy.data`       data sets, synthetic generators, client splits
- :mod:`flprivacy.attacks`    the attacks
- :mod:`flprivacy.bounds`     the papers' analytic bounds
- :mod:`flprivacy.plotting`   the book's figure style
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
