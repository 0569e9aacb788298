"""Where the code that recorded runs executed has moved: the rename map of :mod:`.moves`.

Data only (this module imports nothing). When code moves, add its old and new names here in the
same commit; a result file whose run executed the moved code then stays current (its code is
judged at its new home), and a command recorded under an old module name is the command of the
new one.

* :data:`MODULES`: an old dotted module or package and its new name (a package's submodules
  follow it).
* :data:`UNITS`: ``"old.module:name"`` -> ``"new.module:name"`` for a definition that moved to
  another module on its own (the old module may be named as it was, or as :data:`MODULES` renames it).
* :data:`PROVENANCE_ONLY`: units that compute a record's provenance (which files a run imported,
  their hashes, the commit, the machine, the run's cost and command) or decide whether a recorded
  point is still current (``load_point``: it returns a point's recorded data, itself judged by
  these rules, or None to compute it again), and nothing in a record's ``data``; a change to them
  cannot change a recorded number, so they are not compared.
"""

MODULES: dict[str, str] = {
    "flprivacy.experiments": "flbook.experiments",
    "flprivacy.ledger": "flbook.ledger",
}

UNITS: dict[str, str] = {
    **{f"flprivacy.federation:{name}": f"flprivacy.clients:{name}" for name in (
        "ClientData", "n_local_steps", "batch_schedule", "local_sgd", "LocalTrainer", "LocalSGD", "LeastSquaresSGD",
        "check_clients")},
    **{f"flbook.ledger.wilson:{name}": f"flbook.papers.wilson:{name}" for name in (
        "PAPER", "SETTINGS", "CLIENTS_MAIN", "IMAGES_PER_CLIENT", "LOCAL_ITERATIONS", "FL_LR", "ATTACK_LR", "UNEVEN_SPLIT",
        "FIG7_LPIPS_GAIN_PERCENT", "DUMMY_SCALE_FACTOR", "LEMMA1", "QUOTES")},
    **{f"flbook.ledger.wilson:{name}": f"flbook.ledger.wilson_shared:{name}" for name in (
        "CH_CLIENT", "CH_FACTORS", "CH_DIFFUSION", "mean_digit_ssim")},
    **{f"flbook.ledger.song:{name}": f"flbook.papers.song:{name}" for name in (
        "PAPER", "TABLE_I", "CASES", "TABLE_II", "TABLE_III", "TABLE_IV", "QUOTES")},
    **{f"flbook.ledger.diana_aia:{name}": f"flbook.papers.diana:{name}" for name in (
        "PAPER_TABLE1", "PAPER_TABLE2", "PAPER_TABLE3", "PAPER_FIG1_TEXT")},
    **{f"flbook.ledger.xu_neglia:{name}": f"flbook.papers.xu_neglia:{name}" for name in ("PAPER_TABLE1", "PAPER_ADULT")},
    **{f"flbook.experiments:{name}": f"flbook.results:{name}" for name in ("results_dir", "result_path", "load_result")},
    **{f"flprivacy.attacks.reconstruction:{name}": f"flprivacy.attacks.learned_mapping:{name}" for name in (
        "UpdateMapping", "LearnedMappingResult", "_select", "_adam_decode", "update_span", "decode_mapping",
        "follow_mapping", "_MappingSettings", "_takes_mapping_settings", "learned_mapping_reconstruction_batch",
        "learned_mapping_reconstruction")},
    **{f"flprivacy.attacks.awa:{name}": f"flprivacy.attacks.awa_search:{name}" for name in (
        "WeightSearch", "_storage_url", "tune_weights")},
    **{f"flbook.experiments.awa_table4_resnet18:{name}": f"flbook.names.awa_table4_resnet18:{name}" for name in (
        "NAME", "Run", "bo_name")},
    **{f"flbook.experiments.awa_curves_resnet18:{name}": f"flbook.names.awa_curves_resnet18:{name}" for name in (
        "NAME", "file_name")},
}

PROVENANCE_ONLY: frozenset[str] = frozenset({
    *(f"flprivacy.experiments:{name}" for name in (
        "runtime", "machine", "run_command", "git_commit", "source_hash", "_fingerprint",
        "_imported_library_files", "library_sources", "library_source_units", "started_as_command", "_STARTED")),
    "flprivacy.experiments.points:load_point",
    "flprivacy.experiments.fingerprint:*",
    "flprivacy.experiments.moves:*",
    "flprivacy.experiments.renames:*",
    "flprivacy.experiments.canary:*",
})
