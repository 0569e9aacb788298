"""The attacks, one module per family:

- :mod:`.inference`: attribute inference (model-based AIA, Diana et al. 2025 eq. 3; gradient-based AIA, eq. 2; Model-w-O)
- :mod:`.active`: the active reconstruction of a client's local model (Diana et al. 2025, Alg. 4)
- :mod:`.reconstruction`: local model reconstruction (Alg. 3 with message selection, Xu & Neglia Algo. 3)
- :mod:`.inversion`: gradient inversion (DLG, iDLG, inverting gradients) and the curious-client attack (Wilson et al. 2025)
- :mod:`.awa`: the approximate and weighted attack on multi-epoch FedAvg, with DLG and AGIC baselines (Song et al. 2025)
"""
