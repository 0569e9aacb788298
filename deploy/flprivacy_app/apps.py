"""The Flower App: module-level ``serverapp`` and ``clientapp`` that ``flwr run`` loads.

Both read their settings at run time, from plain files (JSON and safetensors): the ServerApp
from the folder its SuperLink names (``FLPRIVACY_DEPLOY_DIR``: the federation's public description,
and where to save the recorded log), each ClientApp from its SuperNode's node config
(``partition-id`` and ``data``: the file holding that client's data only).
"""

from flprivacy.flower_deploy import deployed_clientapp, deployed_serverapp

serverapp = deployed_serverapp()
clientapp = deployed_clientapp()
