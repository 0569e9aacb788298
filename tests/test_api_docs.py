"""The API reference builds without a warning: every docstring of the library is valid reST.

``book/appendix/api.ipynb`` renders every module's docstrings with Sphinx's autodoc under the
book's ``-W -n`` (warnings are errors, every cross-reference must resolve). A docstring that
breaks that would only show in the full book build, minutes later; this test builds the same
reference alone, with the book's own Sphinx settings from ``_config.yml``, in seconds.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import yaml

import flprivacy

ROOT = Path(__file__).resolve().parents[1]


def library_modules() -> list[str]:
    # The same list as the API page: library modules, not the experiment commands or private ones.
    names = sorted(m.name for m in pkgutil.walk_packages(flprivacy.__path__, "flprivacy.")
                   if ".experiments." not in m.name and not m.name.rsplit(".", 1)[-1].startswith("_"))
    out = []
    for m in ["flprivacy", *names]:
        try:
            importlib.import_module(m)
        except ImportError:  # an optional extra that is not installed (Flower)
            continue
        out.append(m)
    return out


def test_api_reference_builds_with_no_warning(tmp_path):
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]
    settings = {k: v for k, v in cfg["config"].items() if k.startswith(("autodoc_", "napoleon_", "nitpick"))}
    settings["nitpick_ignore_regex"] = [tuple(x) for x in settings.get("nitpick_ignore_regex", [])]
    (tmp_path / "conf.py").write_text(
        "extensions = ['sphinx.ext.autodoc', 'sphinx.ext.napoleon', 'sphinx.ext.mathjax']\n"
        + "".join(f"{k} = {v!r}\n" for k, v in settings.items()))
    rst = ["API", "==="]
    for m in library_modules():
        rst += ["", m, "-" * len(m), "", f".. automodule:: {m}", "   :members:"]
        if hasattr(importlib.import_module(m), "__path__"):
            rst.append("   :ignore-module-all:")
    (tmp_path / "index.rst").write_text("\n".join(rst) + "\n")
    r = subprocess.run([sys.executable, "-m", "sphinx", "-q", "-n", "-b", "html", str(tmp_path), str(tmp_path / "_b")],
                       capture_output=True, text=True, timeout=600)
    problems = [line for line in (r.stdout + r.stderr).splitlines() if "WARNING" in line or "ERROR" in line]
    assert r.returncode == 0 and not problems, (
        "the API reference (book/appendix/api.ipynb) would fail the book's -W -n build:\n" + "\n".join(problems[:40])
        + "\nFix the docstring (valid reST; write |x| as ``|x|``; no colon in the first line of an attribute's "
        "docstring, which napoleon reads as a type), or, for another library's type, extend nitpick_ignore_regex "
        "in _config.yml.")
