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
