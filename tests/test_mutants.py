"""The mutation files stay runnable: every injected bug of ``tests/mutants/*.py`` still names a
line that exists exactly once in its file.

``make mutants`` (tools/mutation.py) injects the bugs one at a time and counts those the tests
catch; it takes long, so the suite only checks here that it *can* run on this checkout: a
refactoring that rewrites a mutated line must update the mutant in the same change."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted(p for p in (ROOT / "tests" / "mutants").glob("*.py") if p.name != "__init__.py")


def _load(path: Path):
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    spec = importlib.util.spec_from_file_location(f"_mutants_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_mutant_applies_once(path):
    mod = _load(path)
    assert mod.MUTANTS, f"{path.name} lists no mutants"
    names = [m.name for m in mod.MUTANTS]
    assert len(names) == len(set(names)), f"{path.name}: duplicate mutant names"
    for m in mod.MUTANTS:
        target = ROOT / m.file
        assert target.is_file(), f"{path.name}: mutant {m.name!r} edits {m.file}, which does not exist"
        n = target.read_text().count(m.old)
        assert n == 1, (f"{path.name}: mutant {m.name!r}: its text occurs {n} times in {m.file}, expected once; "
                        "update the mutant to the current code")
        assert m.old != m.new, f"{path.name}: mutant {m.name!r} changes nothing"

