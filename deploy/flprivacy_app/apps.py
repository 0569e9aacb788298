"""The Flower App: module-level ``serverapp`` and ``clientapp`` that ``flwr run`` loads.

Both read their settings at run time: the ServerApp from the run config (``spec``: the
federation's public description, ``out``: where to save the recorded log), each ClientApp from its
SuperNode's node config (``partition-id`` and ``data``: the file holding that client's data only).
"""

from flprivacy.flower_deploy import deployed_clientapp, deployed_serverapp

serverapp = deployed_serverapp()
clientapp = deployed_clientapp()
