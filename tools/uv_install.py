"""``uv pip install`` into this Python's environment, with this machine's pip configuration.

``make install`` installs the pinned requirements with uv, in less than half pip's time (43 s
against 103 s for the same packages and their bytecode, on a 2-core machine); uv does not read pip's
configuration, the wheel folders, constraints, indexes, certificate and timeout that a machine
sets for pip (``pip.conf``, ``PIP_*`` variables; e.g. a folder with a CPU-only torch wheel), so
this passes them to uv:

    .venv/bin/python tools/uv_install.py -r requirements.txt      # = uv pip install ... -r requirements.txt

Local locations that do not exist are left out, as pip leaves them out (with a warning). The
Makefile falls back to pip when uv cannot be installed or fails.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

# pip's option -> uv's flag (one flag per value of a space-separated list)
FLAGS = {"find-links": "--find-links", "constraint": "--constraint", "index-url": "--index-url",
         "extra-index-url": "--extra-index-url"}


def pip_config() -> dict[str, list[str]]:
    """pip's settings as ``pip config list`` reports them (``global.find-links='…'``,
    ``:env:.find-links='…'`` for a ``PIP_FIND_LINKS`` variable), later lines overriding."""
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                         check=False).stdout
    found: dict[str, list[str]] = {}
    for line in out.splitlines():
        key, sep, value = line.partition("=")
        section, _, name = key.rpartition(".")
        if sep and section in ("global", "install", ":env:"):
            found[name] = shlex.split(value.strip().strip("'\""))
    return found


def exists(location: str) -> bool:
    """A remote location, or a local one that is there."""
    url = urlparse(location)
    if url.scheme in ("http", "https"):
        return True
    return os.path.exists(url.path if url.scheme == "file" else location)


def command(args: list[str], cfg: dict[str, list[str]]) -> tuple[list[str], dict[str, str]]:
    """The uv command line and the environment variables that carry pip's settings."""
    # pip takes the best version over all its indexes; uv by default only the first index that
    # has a package, which can miss a pinned version that pip finds. pip also writes the packages'
    # bytecode, uv only when asked: without it every process (each notebook kernel, test worker and
    # Flower process) would compile its imports again where PYTHONDONTWRITEBYTECODE is set
    cmd = [str(Path(sys.executable).parent / "uv"), "pip", "install", "--python", sys.executable,
           "--index-strategy", "unsafe-best-match", "--compile-bytecode"]
    for name, flag in FLAGS.items():
        cmd += [w for v in cfg.get(name, []) if exists(v) for w in (flag, v)]
    env = {}
    if cfg.get("cert"):
        env["SSL_CERT_FILE"] = cfg["cert"][0]
    timeout = cfg.get("default-timeout") or cfg.get("timeout")
    if timeout:
        env["UV_HTTP_TIMEOUT"] = timeout[0]
    return cmd + args, env


if __name__ == "__main__":
    cmd, env = command(sys.argv[1:], pip_config())
    sys.exit(subprocess.call(cmd, env={**os.environ, **env}))
