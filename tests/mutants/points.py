"""Plausible bugs in the resumable runs (experiments.points) and Part III's commands built on them
(experiments.part3_points).

Run in a private clone (it edits files in place):

    PYTHONPATH=$PWD/src:$PWD python tools/mutation.py tests/mutants/points.py

Each mutant breaks one rule of when a finished point may be reused, or one step of assembling the
result file from points; ``why`` names it.
"""

from tools.mutation import Mutant, pytest_command

PTS = "src/flbook/experiments/points.py"
P3 = "src/flbook/experiments/part3_points.py"

TESTS = pytest_command("tests/test_points.py")

MUTANTS = [
    # ---- when a point is reused ------------------------------------------------------------------------
    Mutant("reuse_ignores_arguments", PTS, ' or rec.get("args") != point.recorded_args()\n', "\n",
           "a point with other arguments is another computation"),
    Mutant("reuse_ignores_scale", PTS, '            or rec.get("scale") != scale_):', "            ):",
           "a quick-scale point never stands in for a paper-scale one"),
    Mutant("reuse_ignores_library_code", PTS, "    return rec if same else None", "    return rec",
           "a point made by other library code is stale (the rule reproduce applies to result files)"),
    Mutant("point_never_written", PTS, "        os.replace(tmp, path)  # a killed run never leaves half a file",
           "        pass", "a finished point is kept at once, or an interrupted run loses it"),
    Mutant("reuse_on_duplicate_keys", PTS, "    if len(set(keys)) != len(keys):", "    if False:",
           "two points of one key would share a file"),
    # ---- assembling the result files --------------------------------------------------------------------
    Mutant("fig3_values_shifted", P3, "        group = pts[i:i + len(seeds)]", "        group = pts[i:i + 1]",
           "each value's point holds all its seeds"),
    Mutant("table3_clip_unused", P3, '(task, source, seed, best))\n', '(task, source, seed, 1e6))\n',
           "every seed runs with the clipping norm the search chose"),
    Mutant("table3_seconds_of_the_call", P3, '    out["seconds"] = out["points_record"]["one_core_seconds"]\n', "",
           "a resumed table's cost is its points' CPU time, not the last call's"),
]
