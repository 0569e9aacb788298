"""The book's reproduction package: what the book runs to reproduce and judge the papers.

``flprivacy`` is the library (federated learning, the attacks, the defences, the data) and knows
nothing of the book; this package holds everything that is about the book's papers and results:

* :mod:`flbook.experiments`: the commands that produce the committed result files
  (``python -m flbook.experiments.<name>``), result I/O with provenance
  (:func:`~flbook.experiments.save_result`, :func:`~flbook.results.load_result`), resumable
  points, the ``reproduce`` tool, and the provenance rules (unit fingerprints, moves, canaries);
* :mod:`flbook.ledger`: every result of the four papers beside ours, with the rule that decides
  each verdict, and the referee that says what each row counts towards.
"""
