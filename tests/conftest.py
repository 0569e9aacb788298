"""Shared fixtures for the unit tests."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from flprivacy import ClientData


@pytest.fixture
def ls_clients() -> list[ClientData]:
    """Three heterogeneous least-squares clients of different sizes (float64)."""
    g = torch.Generator().manual_seed(0)
    out = []
    for n in (40, 25, 60):
        X = torch.randn(n, 4, generator=g, dtype=torch.float64)
        w = torch.randn(4, generator=g, dtype=torch.float64)
        out.append(ClientData(X, X @ w + 0.1 * torch.randn(n, generator=g, dtype=torch.float64)))
    return out


@pytest.fixture
def offline(monkeypatch):
    """No download attempts."""
    monkeypatch.setenv("FLPRIVACY_OFFLINE", "1")


@pytest.fixture
def empty_data_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("FLPRIVACY_DATA_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def data_file():
    """``data_file(rel)``: a file of the configured data directory; the test is skipped, with a
    reason naming the file, when it is absent (CI sets FLPRIVACY_DATA_DIR so that none is)."""
    from flprivacy.data import data_dir

    def get(rel: str) -> Path:
        path = data_dir() / rel
        if not path.is_file():
            pytest.skip(f"data file {rel} not in {data_dir()} (set FLPRIVACY_DATA_DIR to run this test)")
        return path

    return get


@pytest.fixture(scope="session")
def attr_clients():
    """``make(seed=0, sizes=(30, 22, 41, 17), d=4)``: least-squares clients (float64) whose
    column d-1 is a binary sensitive attribute (the Flower tests' federation)."""

    def make(seed: int = 0, sizes=(30, 22, 41, 17), d: int = 4) -> list[ClientData]:
        g = torch.Generator().manual_seed(seed)
        out = []
        for n in sizes:
            X = torch.randn(n, d, generator=g, dtype=torch.float64)
            X[:, d - 1] = (torch.rand(n, generator=g) < 0.5).double()
            w = torch.randn(d, generator=g, dtype=torch.float64)
            out.append(ClientData(X, X @ w + 0.5 + 0.1 * torch.randn(n, generator=g, dtype=torch.float64)))
        return out

    return make
