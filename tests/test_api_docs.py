"""The API reference builds without a warning: every docstring of the library is valid reST.

The reference is one page per module, ``book/appendix/reference/<module>.md`` (an automodule
directive; ``_toc.yml`` lists them by a glob under the index ``book/appendix/api.ipynb``), built
under the book's ``-W -n`` (warnings are errors, every cross-reference must resolve). A docstring
that breaks that would only show in the full book build, minutes later; this test builds the same
pages alone, with the book's own Sphinx settings from ``_config.yml``, in seconds.
"""

from __future__ import annotations

import importlib
import shutil
import pkgutil
import subprocess
import sys
from pathlib import Path

import yaml

import flbook
import flprivacy

ROOT = Path(__file__).resolve().parents[1]


def library_modules() -> list[str]:
    # The same list as the API page: the library's modules and the book package's, not the
    # experiment commands or private ones.
    names = [m for pkg in (flprivacy, flbook) for m in [pkg.__name__, *sorted(
        m.name for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")
        if ".experiments." not in m.name and not m.name.rsplit(".", 1)[-1].startswith("_"))]]
    out = []
    for m in names:
        try:
            importlib.import_module(m)
        except ImportError:  # an optional extra that is not installed (Flower)
            continue
        out.append(m)
    return out


REFERENCE = ROOT / "book" / "appendix" / "reference"


def test_every_module_has_one_reference_page():
    pages = {p.stem for p in REFERENCE.glob("*.md")}
    modules = set(library_modules())
    assert not modules - pages, (f"modules without a page: {sorted(modules - pages)}; add "
                                 f"book/appendix/reference/<module>.md (copy flprivacy.models.md)")
    assert not pages - modules, f"pages of modules that do not exist (remove them): {sorted(pages - modules)}"
    for m in modules:
        text = (REFERENCE / f"{m}.md").read_text()
        assert f".. automodule:: {m}\n" in text, f"{m}.md does not document {m}"
    toc = (ROOT / "_toc.yml").read_text()
    assert "glob: book/appendix/reference/*" in toc, "_toc.yml must list the module pages (glob)"


def test_api_reference_builds_with_no_warning(tmp_path):
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]
    settings = {k: v for k, v in cfg["config"].items() if k.startswith(("autodoc_", "napoleon_", "nitpick"))}
    settings["nitpick_ignore_regex"] = [tuple(x) for x in settings.get("nitpick_ignore_regex", [])]
    (tmp_path / "conf.py").write_text(
        "extensions = ['myst_parser', 'sphinx.ext.autodoc', 'sphinx.ext.napoleon', 'sphinx.ext.mathjax']\n"
        "suppress_warnings = ['myst.header']\n"
        + "".join(f"{k} = {v!r}\n" for k, v in settings.items()))
    shutil.copytree(REFERENCE, tmp_path / "reference")
    (tmp_path / "index.rst").write_text("API\n===\n\n.. toctree::\n   :glob:\n\n   reference/*\n")
    r = subprocess.run([sys.executable, "-m", "sphinx", "-q", "-n", "-b", "html", str(tmp_path), str(tmp_path / "_b")],
                       capture_output=True, text=True, timeout=600)
    problems = [line for line in (r.stdout + r.stderr).splitlines() if "WARNING" in line or "ERROR" in line]
    assert r.returncode == 0 and not problems, (
        "the API reference (book/appendix/reference/) would fail the book's -W -n build:\n" + "\n".join(problems[:40])
        + "\nFix the docstring (valid reST; write |x| as ``|x|``; no colon in the first line of an attribute's "
        "docstring, which napoleon reads as a type), or, for another library's type, extend nitpick_ignore_regex "
        "in _config.yml.")
