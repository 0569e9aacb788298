"""The attacks, one module per family:

- :mod:`.inference`: attribute inference (model-based AIA, Diana et al. 2025 eq. 3)
- :mod:`.reconstruction`: local model reconstruction (Alg. 3 with message selection, Xu & Neglia Algo. 3)
- :mod:`.inversion`: gradient inversion (DLG, iDLG, inverting gradients) and the curious-client attack (Wilson et al. 2025)
"""
