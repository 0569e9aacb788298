"""The attacks, one module per family:

- :mod:`.model_based_aia`: model-based attribute inference (Diana et al. 2025, eq. 3-4, Prop. 1)
- :mod:`.gradient_aia`: gradient-based attribute inference (Diana et al. 2025, eq. 2, App. B.5); the
  Model-w-O oracle's optimum is :func:`flprivacy.optimum.optimal_local_models`
- :mod:`.active`: the active reconstruction of a client's local model (Diana et al. 2025, Alg. 4)
- :mod:`.reconstruction`: exact local model reconstruction for least squares (Diana et al. 2025, Alg. 3 with
  message selection; Xu & Neglia 2021, Obs. 1)
- :mod:`.learned_mapping`: local model reconstruction for any model by a learned update map (Xu & Neglia
  2021, Algo. 3)
- :mod:`.inversion`: gradient inversion (DLG, iDLG, inverting gradients) and the curious-client attack (Wilson et al. 2025)
- :mod:`.awa`: the approximate and weighted attack on multi-epoch FedAvg, with DLG and AGIC baselines (Song et al. 2025)
- :mod:`.awa_search`: the Bayesian optimisation of AWA's layer weights (Song et al. 2025, §4.2.2)
"""
