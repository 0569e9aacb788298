"""Mutants for ``tools/mutation.py``: one file per area, each a list of injected bugs.

Not collected by pytest (the files define no tests).
"""
