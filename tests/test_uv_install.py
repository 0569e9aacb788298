"""tools/uv_install.py: `make install` hands uv the pip configuration a machine sets (its wheel
folders, constraints, indexes, certificate, timeout), so that uv installs what pip would."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("uv_install", ROOT / "tools" / "uv_install.py")
uv_install = importlib.util.module_from_spec(spec)
spec.loader.exec_module(uv_install)


def test_pip_settings_become_uv_flags_and_missing_local_locations_are_left_out(tmp_path):
    wheels, cons = tmp_path / "wheels", tmp_path / "constraints.txt"
    wheels.mkdir()
    cons.write_text("torch<=2.14.1\n")
    cfg = {"find-links": [str(wheels), str(tmp_path / "absent")], "constraint": [str(cons)],
           "extra-index-url": [f"file://{tmp_path}/absent-index", "https://example.org/simple"],
           "cert": ["/etc/ssl/certs/ca.crt"], "default-timeout": ["180"], "disable-pip-version-check": ["1"]}
    cmd, env = uv_install.command(["-r", "requirements.txt"], cfg)
    assert cmd[:4] == [str(Path(sys.executable).parent / "uv"), "pip", "install", "--python"]
    assert cmd[cmd.index("--index-strategy") + 1] == "unsafe-best-match"  # pip's rule: best version over all indexes
    assert "--compile-bytecode" in cmd  # as pip does: imports read bytecode, not the sources
    flags = cmd[cmd.index("--compile-bytecode") + 1:]
    assert flags == ["--find-links", str(wheels), "--constraint", str(cons),
                     "--extra-index-url", "https://example.org/simple", "-r", "requirements.txt"]
    assert env == {"SSL_CERT_FILE": "/etc/ssl/certs/ca.crt", "UV_HTTP_TIMEOUT": "180"}


def test_pip_config_list_is_parsed(monkeypatch):
    out = ("global.find-links='/opt/wheels'\n:env:.find-links='/a /b'\ninstall.constraint='/c.txt'\n"
           "site.ignored='x'\nnot a setting\n")
    monkeypatch.setattr(uv_install.subprocess, "run", lambda *a, **k: type("R", (), {"stdout": out})())
    assert uv_install.pip_config() == {"find-links": ["/a", "/b"], "constraint": ["/c.txt"]}
