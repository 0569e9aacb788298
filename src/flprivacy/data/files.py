"""Where data files live, and how a missing one is fetched.

The data directory is ``$FLPRIVACY_DATA_DIR`` if set, else ``data/cache`` in the project
checkout (or ``~/.cache/flprivacy`` for an installed, non-editable package). Files sit at
fixed relative paths (``medical/insurance.csv``, ``adult/adult.data``, ...), listed in
``REGISTRY`` with their checksum and original public source.

:func:`fetch` returns the path of a file, downloading it from its source into the data
directory when it is missing and the network allows, and checks the checksum. When it cannot,
it raises :class:`DataNotFoundError` naming the file, where it was looked for and how to
provide it. It never substitutes another file.
"""

from __future__ import annotations

import hashlib
import os
import socket
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from .. import config

CONNECT_TIMEOUT = 3.0
"""Seconds to wait for a mirror to accept a connection before trying the next one."""

DATA_ENV = "FLPRIVACY_DATA_DIR"
OFFLINE_ENV = "FLPRIVACY_OFFLINE"


class DataNotFoundError(FileNotFoundError):
    """A data file is missing and could not be downloaded."""


class ChecksumError(ValueError):
    """A file's checksum does not match the registry."""


@dataclass(frozen=True)
class RemoteFile:
    """A data file: its path under the data directory, checksum and public sources.

    Args:
        path: relative path under the data directory, e.g. ``"adult/adult.data"``.
        checksum: ``"sha256:<hex>"`` or ``"md5:<hex>"``; empty to skip the check.
        urls: original public sources, tried in order (none: must be supplied by hand).
        note: how to obtain it by hand, shown in errors.
    """

    path: str
    checksum: str = ""
    urls: tuple[str, ...] = ()
    note: str = ""


def data_dir() -> Path:
    """The data directory: ``$FLPRIVACY_DATA_DIR``, else ``<project>/data/cache``.

    A relative ``FLPRIVACY_DATA_DIR`` is resolved against the current directory, then against
    the project root (notebooks run from their own folder).

    Raises:
        DataNotFoundError: if ``FLPRIVACY_DATA_DIR`` names a directory that does not exist.
    """
    env = config.env(DATA_ENV)
    if env:
        p = Path(env).expanduser()
        candidates = [p] if p.is_absolute() else [Path.cwd() / p] + ([config.project_root() / p] if config.project_root() else [])
        for c in candidates:
            if c.is_dir():
                return c.resolve()
        raise DataNotFoundError(
            f"{DATA_ENV}={env!r} is not a directory (looked in {', '.join(str(c) for c in candidates)}). "
            f"Point {DATA_ENV} at the folder holding the data sets (e.g. ../shared/data), or unset it to use "
            "the default cache."
        )
    root = config.project_root()
    return (root / "data" / "cache") if root else Path.home() / ".cache" / "flprivacy"


def file_digest(path: Path, algorithm: str) -> str:
    """Hex digest of a file (``"sha256"`` or ``"md5"``)."""
    h = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verify(path: Path, checksum: str) -> None:
    """Raise :class:`ChecksumError` unless ``path`` matches ``checksum`` (``"algo:hex"``)."""
    if not checksum:
        return
    algo, _, expected = checksum.partition(":")
    if algo not in ("sha256", "md5") or not expected:
        raise ValueError(f"verify: checksum must be 'sha256:<hex>' (or 'md5:<hex>'); got {checksum!r}.")
    got = file_digest(path, algo)
    if got != expected.lower():
        raise ChecksumError(
            f"{path} has {algo} {got}, expected {expected}. The file is corrupted or a different version; "
            "delete it and fetch it again (or restore the original)."
        )


_VERIFIED: dict[tuple[Path, str], float] = {}  # files already checked, with their mtime


def download(url: str, dest: Path, checksum: str = "", timeout: float = 30.0) -> Path:
    """Download ``url`` to ``dest`` atomically, checking ``checksum``; returns ``dest``.

    Raises:
        ChecksumError: the downloaded bytes do not match (nothing is written to ``dest``).
        OSError: the network failed (``urllib.error.URLError`` is one).
    """
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # fails before anything is written
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=dest.name + ".", suffix=".part")
        try:
            total = int(resp.headers.get("Content-Length") or 0) or None
            with os.fdopen(fd, "wb") as out, tqdm(total=total, unit="B", unit_scale=True, leave=False,
                                                  desc=f"downloading {dest.name}",
                                                  disable=total is None or total < (1 << 22)) as bar:
                for chunk in iter(lambda: resp.read(1 << 20), b""):
                    out.write(chunk)
                    bar.update(len(chunk))
            try:
                verify(Path(tmp), checksum)
            except ChecksumError as e:
                raise ChecksumError(f"download of {url} failed its checksum: {e}") from None
            os.replace(tmp, dest)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    return dest


def reachable(url: str, timeout: float = 3.0) -> bool:
    """Whether the host of ``url`` accepts a connection (a cheap check before a download that
    would leave side effects behind when the network is down)."""
    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout):
            return True
    except OSError:
        return False


def fetch(file: RemoteFile | str, *, root: Path | None = None, allow_download: bool | None = None) -> Path:
    """Path of a registered data file, downloading it if it is missing.

    Args:
        file: a :class:`RemoteFile` or the relative path of one in ``REGISTRY``.
        root: data directory (default :func:`data_dir`).
        allow_download: try the sources when the file is missing (default: yes, unless
            ``FLPRIVACY_OFFLINE=1``).

    Raises:
        DataNotFoundError: missing and not downloadable; the message says how to provide it.
        ChecksumError: present or downloaded with the wrong checksum.
    """
    if isinstance(file, str):
        if file not in REGISTRY:
            raise KeyError(f"{file!r} is not a registered data file; known files: {sorted(REGISTRY)}.")
        file = REGISTRY[file]
    root = data_dir() if root is None else Path(root)
    path = root / file.path
    if path.is_file():
        mtime = path.stat().st_mtime
        if _VERIFIED.get((path, file.checksum)) != mtime:
            verify(path, file.checksum)
            _VERIFIED[(path, file.checksum)] = mtime
        return path
    if allow_download is None:
        allow_download = config.env(OFFLINE_ENV, "0").lower() not in ("1", "true", "yes")
    errors = []
    if allow_download:
        for url in file.urls:
            if not reachable(url, timeout=CONNECT_TIMEOUT):  # a dead mirror costs seconds, not a 30-60 s read timeout
                errors.append(f"{url}: host unreachable within {CONNECT_TIMEOUT:g} s")
                continue
            try:
                return download(url, path, file.checksum)
            except ChecksumError:
                raise
            except (urllib.error.URLError, OSError, TimeoutError) as e:  # network down, 404, read-only dir
                errors.append(f"{url}: {e}")
    how = (f"download it from {file.urls[0]}" if file.urls else (file.note or "supply it by hand"))
    tried = ("; download failed (" + "; ".join(errors) + ")") if errors else (
        "; downloading is off (FLPRIVACY_OFFLINE=1)" if file.urls and not allow_download else "")
    raise DataNotFoundError(
        f"data file {file.path!r} not found in {root}{tried}. To fix: {how} and save it as {path}, "
        f"or set {DATA_ENV} to a folder that holds {file.path}."
        + (f" ({file.note})" if file.note and file.urls else "")
    )


# ---- the registry -----------------------------------------------------------------------------
_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"
_MNIST = ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/")
_MEDICAL = "https://raw.githubusercontent.com/stedy/Machine-Learning-with-R-datasets/ff933238d9c30da179b7e3ad4b6ca938d67efc53/"

REGISTRY: dict[str, RemoteFile] = {
    f.path: f
    for f in [
        RemoteFile("medical/insurance.csv",
                   "sha256:505c1cbc2e63d0363bac59501563df2530aadf4cdb9cfee226f4ef32f5468281",
                   (_MEDICAL + "insurance.csv",), "Lantz 2013, Machine Learning with R; 1,338 rows"),
        RemoteFile("adult/adult.data",
                   "sha256:5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
                   (_UCI + "adult.data",), "UCI Adult training file, 32,561 rows"),
        RemoteFile("adult/adult.test",
                   "sha256:a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
                   (_UCI + "adult.test",), "UCI Adult test file, 16,281 rows"),
        RemoteFile("mnist/t10k-images-idx3-ubyte.gz",
                   "sha256:8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
                   tuple(u + "t10k-images-idx3-ubyte.gz" for u in _MNIST)),
        RemoteFile("mnist/t10k-labels-idx1-ubyte.gz",
                   "sha256:f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
                   tuple(u + "t10k-labels-idx1-ubyte.gz" for u in _MNIST)),
        RemoteFile("mnist/train-images-idx3-ubyte.gz",
                   "sha256:440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
                   tuple(u + "train-images-idx3-ubyte.gz" for u in _MNIST)),
        RemoteFile("mnist/train-labels-idx1-ubyte.gz",
                   "sha256:3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
                   tuple(u + "train-labels-idx1-ubyte.gz" for u in _MNIST)),
        # sha256, not md5: the archive is unpickled, so its integrity check must resist forgery
        RemoteFile("cifar10/cifar-10-python.tar.gz",
                   "sha256:6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
                   ("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",),
                   "the original CIFAR-10 archive (163 MB), Krizhevsky 2009"),
        RemoteFile("cifar10/cifar10_test_decoded_from_jpg.npz",
                   "sha256:83265a06a790d7c7b632017409081938a2dd2b5a1ffb54d758b8ae11ad041e84", (),
                   "the CIFAR-10 test set decoded from quality-75 JPEGs, described in shared/data/SOURCES.md"),
    ]
}


def data_dir_as_variable(text: str) -> str:
    """``text`` with the data directory's absolute path (:func:`data_dir`) written as
    ``$FLPRIVACY_DATA_DIR``.

    The loaders name the files they miss or replace by their absolute path, which is what a user
    at a terminal needs. A page of the rendered book must not show the folders of the machine
    that built it, so the chapters print those messages through this function (or inside
    :class:`DataPathsAsVariable`)."""
    if not isinstance(text, str):
        raise TypeError(f"data_dir_as_variable: text must be a str, got {type(text).__name__}; "
                        "pass str(message) for a warning.")
    return text.replace(str(data_dir()), f"${DATA_ENV}")


class DataPathsAsVariable:
    """Context manager: what the code inside prints to standard output is shown on leaving, with
    the data directory's absolute path written as ``$FLPRIVACY_DATA_DIR``
    (:func:`data_dir_as_variable`). Use it around a call whose loaders may announce a missing
    file (e.g. ``acs_available``) in a chapter; warnings are not captured (print their message
    through :func:`data_dir_as_variable`)."""

    def __enter__(self) -> DataPathsAsVariable:
        import contextlib
        import io

        self._buffer = io.StringIO()
        self._redirect = contextlib.redirect_stdout(self._buffer)
        self._redirect.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._redirect.__exit__(*exc)
        print(data_dir_as_variable(self._buffer.getvalue()), end="")
