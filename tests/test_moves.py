"""Provenance that lets code move (flbook.experiments.moves): each case of its rule on a small
package committed to a throw-away git repository, then edited in the working tree."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from flbook.experiments.fingerprint import MAIN_GUARD
from flbook.experiments.moves import (
    Renames,
    check_moved,
    rename_command,
    rename_function,
)

HELPERS = '''"""Helpers."""
import math

RATE = 0.5
TABLE = {"a": (1.0, 2.0), "b": (0.0, 0.5)}


def scale(x):
    return RATE * math.sqrt(x)


def unused(x):
    return x - 1
'''

COMMAND = '''"""A command."""
from .helpers import TABLE, scale


def run(x):
    return scale(x) + len(TABLE)


POINT = "flprivacy.exp.cmd:run"

if __name__ == "__main__":
    print(run(4.0))
'''

INIT = '"""Package."""\n'


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    """A repository with src/flprivacy/exp/{__init__,helpers,cmd}.py committed; returns (repo, commit, sources)."""
    files = {"flprivacy/__init__.py": INIT, "flprivacy/exp/__init__.py": INIT,
             "flprivacy/exp/helpers.py": HELPERS, "flprivacy/exp/cmd.py": COMMAND}
    for rel, text in files.items():
        (tmp_path / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "src" / rel).write_text(text)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "run")
    sources = {rel: hashlib.sha256(text.encode()).hexdigest()[:16] for rel, text in files.items()}
    return tmp_path, _git(tmp_path, "rev-parse", "HEAD"), sources


ENTRY = [("flprivacy/exp/cmd.py", MAIN_GUARD)]


def _check(repo, renames=Renames(), entries=ENTRY):
    path, commit, sources = repo
    return check_moved(sources, commit, entries, renames, path, path / "src")


def _write(repo, rel: str, text: str) -> None:
    p = repo[0] / "src" / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def _remove(repo, rel: str) -> None:
    (repo[0] / "src" / rel).unlink()


def test_unchanged_code_is_current(repo):
    assert _check(repo) == (True, "")


def test_a_function_moved_to_another_module_with_the_map_is_current(repo):
    _write(repo, "flprivacy/exp/maths.py", '"""Maths."""\nimport math\n\nfrom .helpers import RATE\n\n\n'
           'def scale(x):\n    return RATE * math.sqrt(x)\n')
    _write(repo, "flprivacy/exp/helpers.py", HELPERS.replace(
        'def scale(x):\n    return RATE * math.sqrt(x)\n\n\n', ""))
    _write(repo, "flprivacy/exp/cmd.py", COMMAND.replace("from .helpers import TABLE, scale",
                                                         "from .helpers import TABLE\nfrom .maths import scale"))
    assert _check(repo, Renames(units={"flprivacy.exp.helpers:scale": "flprivacy.exp.maths:scale"}))[0]
    ok, why = _check(repo)  # without the map, the run's helpers.scale is gone
    assert not ok and "scale" in why


def test_a_moved_function_whose_body_changed_is_stale(repo):
    _write(repo, "flprivacy/exp/maths.py", '"""Maths."""\nimport math\n\nfrom .helpers import RATE\n\n\n'
           'def scale(x):\n    return RATE * math.sqrt(x) * 1.0001\n')
    _write(repo, "flprivacy/exp/cmd.py", COMMAND.replace("from .helpers import TABLE, scale",
                                                         "from .helpers import TABLE\nfrom .maths import scale"))
    ok, why = _check(repo, Renames(units={"flprivacy.exp.helpers:scale": "flprivacy.exp.maths:scale"}))
    assert not ok and "scale changed" in why


def test_a_moved_function_that_now_calls_another_helper_is_stale(repo):
    _write(repo, "flprivacy/exp/maths.py", '"""Maths."""\nimport math\n\nRATE = 0.25\n\n\n'
           'def scale(x):\n    return RATE * math.sqrt(x)\n')  # same body, but RATE is another value here
    _write(repo, "flprivacy/exp/cmd.py", COMMAND.replace("from .helpers import TABLE, scale",
                                                         "from .helpers import TABLE\nfrom .maths import scale"))
    ok, why = _check(repo, Renames(units={"flprivacy.exp.helpers:scale": "flprivacy.exp.maths:scale"}))
    assert not ok and "RATE" in why


def test_removing_what_the_run_could_not_reach_is_current_and_what_it_could_is_stale(repo):
    _write(repo, "flprivacy/exp/helpers.py", HELPERS.replace('def unused(x):\n    return x - 1\n', ""))
    assert _check(repo)[0]
    _write(repo, "flprivacy/exp/helpers.py", HELPERS.replace("RATE = 0.5\n", ""))
    ok, why = _check(repo)
    assert not ok and "RATE" in why


def test_a_renamed_package_and_its_command_are_the_same_code(repo):
    for rel, text in (("flbook/__init__.py", INIT), ("flbook/exp/__init__.py", INIT),
                      ("flbook/exp/helpers.py", HELPERS),
                      ("flbook/exp/cmd.py", COMMAND.replace("flprivacy.exp.cmd:run", "flbook.exp.cmd:run"))):
        _write(repo, rel, text)
    for rel in ("flprivacy/exp/__init__.py", "flprivacy/exp/helpers.py", "flprivacy/exp/cmd.py"):
        _remove(repo, rel)
    renames = Renames(modules={"flprivacy.exp": "flbook.exp"})
    assert _check(repo, renames) == (True, "")  # the point's "module:function" string is renamed too
    assert not _check(repo)[0]
    assert rename_command("FLPRIVACY_SCALE=paper python -m flprivacy.exp.cmd --seeds 0", renames) == (
        "FLPRIVACY_SCALE=paper python -m flbook.exp.cmd --seeds 0")
    assert rename_function("flprivacy.exp.cmd:run", renames) == "flbook.exp.cmd:run"


def test_an_import_that_now_binds_another_definition_is_stale(repo):
    _write(repo, "flprivacy/exp/other.py", '"""Other."""\n\n\ndef scale(x):\n    return 2 * x\n')
    _write(repo, "flprivacy/exp/cmd.py", COMMAND.replace("from .helpers import TABLE, scale",
                                                         "from .helpers import TABLE\nfrom .other import scale"))
    ok, why = _check(repo)
    assert not ok and "scale" in why


def test_a_new_statement_at_import_in_a_module_the_run_imported_is_stale(repo):
    _write(repo, "flprivacy/exp/helpers.py", HELPERS + "\nimport random\nrandom.seed(1)\n")
    ok, why = _check(repo)
    assert not ok and "at import" in why


def test_a_table_kept_as_the_same_literal_elsewhere_is_the_same_object(repo):
    _write(repo, "flprivacy/exp/cmd.py", COMMAND.replace(
        "from .helpers import TABLE, scale", 'from .helpers import scale\n\nTABLE = {"a": (1.0, 2.0), "b": (0.0, 0.5)}'))
    assert _check(repo)[0]
    _write(repo, "flprivacy/exp/cmd.py", COMMAND.replace(
        "from .helpers import TABLE, scale", 'from .helpers import scale\n\nTABLE = {"a": (1.0, 2.0), "b": (0.0, 0.6)}'))
    assert not _check(repo)[0]


def test_a_change_to_a_provenance_only_unit_is_not_compared(repo):
    _write(repo, "flprivacy/exp/helpers.py", HELPERS.replace("RATE = 0.5", "RATE = 0.75"))
    assert not _check(repo)[0]
    assert _check(repo, Renames(provenance_only=frozenset({"flprivacy.exp.helpers:RATE"})))[0]


def test_a_file_git_does_not_give_as_recorded_is_stale(repo):
    path, commit, sources = repo
    wrong = dict(sources, **{"flprivacy/exp/helpers.py": "0" * 16})
    ok, why = check_moved(wrong, commit, ENTRY, Renames(), path, path / "src")
    assert not ok and why.startswith("the run's code is not available") and "not the file the run recorded" in why


def test_a_function_called_as_a_module_attribute_may_move_with_the_map(repo):
    _write(repo, "flprivacy/exp/cmd.py", COMMAND.replace("from .helpers import TABLE, scale", "from . import helpers\nfrom .helpers import TABLE").replace(
        "return scale(x)", "return helpers.scale(x)"))
    path, commit, sources = repo
    _git(path, "add", "-A")
    _git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "attribute")
    text = (path / "src/flprivacy/exp/cmd.py").read_bytes()
    run = (path, _git(path, "rev-parse", "HEAD"), dict(sources, **{"flprivacy/exp/cmd.py": hashlib.sha256(text).hexdigest()[:16]}))
    _write(repo, "flprivacy/exp/maths.py", '"""Maths."""\nimport math\n\nfrom .helpers import RATE\n\n\n'
           'def scale(x):\n    return RATE * math.sqrt(x)\n')
    _write(repo, "flprivacy/exp/cmd.py", text.decode().replace("from . import helpers", "from . import maths").replace(
        "helpers.scale(x)", "maths.scale(x)"))
    renames = Renames(units={"flprivacy.exp.helpers:scale": "flprivacy.exp.maths:scale"})
    ok, why = _check(run, renames)
    assert ok, why  # helpers.scale in the run is maths.scale now
    _write(repo, "flprivacy/exp/cmd.py", text.decode().replace("helpers.scale(x)", "helpers.unused(x)"))
    assert not _check(run, renames)[0]  # another function of the same module


def test_differences_lists_every_changed_unit_at_its_new_home(repo):
    from flbook.experiments.moves import differences

    path, commit, sources = repo  # helpers moved to maths (a module rename), scale's body changed, TABLE changed
    _write(repo, "flprivacy/exp/maths.py", HELPERS.replace("RATE * math.sqrt(x)", "RATE * math.sqrt(x) * 2")
           .replace('"b": (0.0, 0.5)', '"b": (0.0, 0.6)'))
    _remove(repo, "flprivacy/exp/helpers.py")
    _write(repo, "flprivacy/exp/cmd.py", COMMAND.replace("from .helpers import", "from .maths import"))
    renames = Renames(modules={"flprivacy.exp.helpers": "flprivacy.exp.maths"})
    found = list(differences(sources, commit, ENTRY, renames, path, path / "src"))
    assert sorted(w for w, _ in found) == [("flprivacy.exp.maths", "TABLE"), ("flprivacy.exp.maths", "scale")]
    assert not _check(repo, renames)[0]  # check_moved stops at the first of them
    _write(repo, "flprivacy/exp/maths.py", HELPERS)  # only the move left
    assert list(differences(sources, commit, ENTRY, renames, path, path / "src")) == []


def test_a_provenance_only_unit_may_be_named_by_its_old_or_its_new_module():
    r = Renames(modules={"flprivacy.experiments": "flbook.experiments"},
                provenance_only=frozenset({"flbook.experiments.fingerprint:*", "flprivacy.experiments.points:load_point"}))
    assert r.exempt("flprivacy.experiments.fingerprint", "_parsed")  # a run recorded under the old name
    assert r.exempt("flbook.experiments.fingerprint", "_parsed")
    assert r.exempt("flbook.experiments.points", "load_point") and r.exempt("flprivacy.experiments.points", "load_point")
    assert not r.exempt("flbook.experiments.points", "run_points")
