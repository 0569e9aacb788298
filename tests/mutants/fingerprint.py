"""Plausible bugs in the rule that decides whether a result file is current
(flprivacy.experiments.fingerprint, reproduce's status): each would call a file current after an
edit that can change its numbers, or stale after one that cannot.

    python tools/mutation.py tests/mutants/fingerprint.py
"""

import sys

from tools.mutation import Mutant

FP = "src/flprivacy/experiments/fingerprint.py"
EXP = "src/flprivacy/experiments/__init__.py"
REP = "src/flprivacy/experiments/reproduce.py"

TESTS = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
         "tests/test_reproduce.py", "tests/test_points.py"]
PTS = "src/flprivacy/experiments/points.py"

MUTANTS = [
    Mutant("reached_change_ignored", FP, "        if (rel, name) in reach:\n            return False, f\"{why}, and",
           "        if False:\n            return False, f\"{why}, and",
           "a changed function the run calls keeps the file current once entries are given"),
    Mutant("reach_without_own_globals", FP, "            todo += [(rel, n) for n in own if n in files[rel][0]]\n",
           "", "a function reached only by its name in the same file (or an imported name) is never reached"),
    Mutant("looked_up_names_ignored", FP,
           "            for n in names | (strings if every_string else lookups or frozenset()):",
           "            for n in names:", "getattr(module, \"name\") does not reach the unit it names"),
    Mutant("computed_lookups_ignored", FP, "            if lookups is None and not every_string:",
           "            if False:", "getattr(module, name) with a computed name does not make every string count"),
    Mutant("import_time_roots_dropped", FP,
           "        starts += [(rel, u) for u, nodes in units.items() if u == MODULE or not _inert(nodes, rel, files, root, lazy)]",
           "        pass", "a function registered by a decorator at import is reached only if something names it"),
    Mutant("changed_constants_by_reach", FP,
           "                elif entries is None or name not in cur or not all(",
           "                elif entries is None or name not in cur or all(",
           "a constant once computed by a call at import, now plain and unnamed, keeps the file current"),
    Mutant("main_guard_a_root", FP, "        units[MODULE] = [n for n in units[MODULE] if not _is_main_guard(n)]\n", "",
           "a module's __main__ block counts as run wherever the module is imported: a point goes stale on "
           "an edit to the command's main it never ran"),
    Mutant("main_guard_not_an_entry", REP, 'entries = [(own, MAIN_GUARD)] if units',
           'entries = [] if units', "what the command's __main__ block runs is not judged: an edit to its main "
                                    "keeps its file current"),
    Mutant("strings_whole_only", FP, "for w in _IDENTIFIER.findall(n.value)}",
           "for w in ([n.value] if n.value.isidentifier() else [])}",
           "a point's function named by its \"package.module:function\" path is not reached"),
    Mutant("listing_ignored_in_reach", FP, "            if lists:\n                return None\n", "",
           "vars(module) in the run's code does not make every unit reachable"),
    Mutant("point_judged_without_entry", PTS, "[(own, name)] if units is not None else None", "None",
           "a point goes stale on any edit to a file its process imported, even code it never ran"),
    Mutant("removed_units_ignored", FP, "if name not in cur or digests[name] != digest:",
           "if name in cur and digests[name] != digest:", "a removed function or import keeps the file current"),
    Mutant("nested_docstrings_kept", FP, "    for node in ast.walk(tree):\n        for field in",
           "    for node in (tree, *tree.body):\n        for field in",
           "only module- and top-level docstrings are stripped: a nested docstring edit makes files stale"),
    Mutant("line_numbers_hashed", FP, 'text = "\\n".join(ast.dump(n) for n in nodes)',
           'text = "\\n".join(ast.dump(n, include_attributes=True) for n in nodes)',
           "a blank line moves every later unit: layout edits make files stale"),
    Mutant("added_units_not_checked_for_import_effects", FP,
           "if name == MODULE or not _inert(cur[name], rel, sources, root, lazy):", "if name == MODULE:",
           "a new decorated function (a registry) or a constant drawn at import counts as harmless"),
    Mutant("added_module_statement_harmless", FP,
           "if name == MODULE or not _inert(cur[name], rel, sources, root, lazy):",
           "if not _inert(cur[name], rel, sources, root, lazy):",
           "a new top-level statement (not a definition) counts as harmless"),
    Mutant("builtin_shadowing_ignored", FP,
           "if name in mentioned or name in _global_names([n for u in keep for n in cur[u]]):",
           "if name in mentioned:", "a new function named like a builtin the run called counts as harmless"),
    Mutant("cross_file_lookups_ignored", FP,
           "if name in mentioned or name in _global_names([n for u in keep for n in cur[u]]):",
           "if name in _global_names([n for u in keep for n in cur[u]]):",
           "a new function another file looks up by name (getattr, hasattr) counts as harmless"),
    Mutant("order_ignored", FP, "if not _is_subsequence(recorded_order, order):",
           "if False:", "moving an assignment past another that reads it keeps the file current"),
    Mutant("twice_bound_keeps_last", FP, "units.setdefault(name, []).append(node)", "units[name] = [node]",
           "a name bound twice: an edit of the first binding is not seen"),
    Mutant("import_line_as_one_unit", FP,
           "ast.ImportFrom(module=stmt.module, names=[a], level=stmt.level))", "stmt)",
           "adding a name to an existing import line makes every name on it stale"),
    Mutant("whole_file_rule_dropped", FP, "            if now != sha:\n", "            if False:\n",
           "an old record (no units) is current whatever its files became"),
    Mutant("unrecorded_library_import_harmless", FP,
           "ok = files is not None and all(f in recorded or not (root / f).is_file() for f in files)",
           "ok = files is not None", "a new import of a library module the run never imported counts as harmless"),
    Mutant("star_import_ignored", FP, "    if exports and reads_all:\n", "    if False:\n",
           "a changed __all__ counts as harmless even for a file that star-imports it"),
    Mutant("namespace_listing_ignored", FP, "        if ENUMERATES in mentioned:\n", "        if False:\n",
           "a new function counts as harmless though the run's code lists the module (vars, dir)"),
    Mutant("annotation_names_ignored", FP, "out.update(x.id for x in ast.walk(a) if isinstance(x, ast.Name))",
           "pass", "a new class another file names only in a (lazy) annotation counts as harmless"),
    Mutant("import_time_calls_unchecked", FP, "if isinstance(n, ast.Call) and _dotted(n.func) not in PURE_CALLS:",
           "if False:", "a new constant computed by a call at import (which may draw random numbers) counts as harmless"),
    Mutant("dunder_added_harmless", FP, 'if name.startswith("__") and name.endswith("__"):', "if False:",
           "a new module __getattr__ (which answers every failed look-up) counts as harmless"),
    Mutant("fingerprint_read_at_save", EXP, "@functools.lru_cache(maxsize=None)  # a run fingerprints",
           "# a run fingerprints", "the units are read again at the save: an edit made during a run is recorded"),
    Mutant("status_ignores_units", REP,
           'same, changed = sources_unchanged(sources, units, entries)',
           'same, changed = sources_unchanged(sources, None, entries)',
           "new records are judged by whole files: every docstring edit makes them stale"),
    Mutant("own_module_ignored", REP, "if own not in sources:  # run as __main__",
           "if False:  # run as __main__",
           "the command's own module (run as __main__, absent from its record) is never judged: an edit to an "
           "experiment's settings keeps its file current"),
    Mutant("own_module_by_whole_file", REP, "                units[own] = at_commit[1]",
           "                pass",
           "the own module is judged by its whole-file hash: a docstring edit to an experiment makes its file stale"),
    Mutant("interrupt_leaves_children", REP, "        stopped = stop_running()\n", "        stopped = 0\n",
           "an interrupted run leaves its commands running, writing into a log nobody reads"),
    Mutant("stop_spares_queued_jobs", REP, "            if _stopping.is_set():\n                return {**out, \"status\": \"stopped\"}\n",
           "", "after a stop, a queued command still starts"),
    Mutant("plan_total_counts_stale_files", REP, 'timed = [j["one_core_seconds"] for j in done if',
           'timed = [j["one_core_seconds"] for j in jobs if',
           "reproduce.json's end-to-end cost counts files that are no longer current"),
    Mutant("inner_jobs_dropped", REP, 'extra = ("--jobs", str(inner)) if job.splits and inner > 1 else ()',
           "extra = ()", "--inner-jobs never reaches the sweep: a sweep longer than a session cannot finish in one"),
    Mutant("failure_without_its_last_line", REP, "        out[\"error\"] = lines[-1:] or",
           "        out[\"error\"] = lines[:1] or", "a failed command reports the first line of its log, not the error"),
]
