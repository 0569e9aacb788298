"""The data layer: file resolution, checksummed downloads, clear errors, loaders, splits."""

from __future__ import annotations

import functools
import hashlib
import http.server
import threading
from pathlib import Path

import pandas as pd
import pytest
import torch

from flprivacy import config
from flprivacy.data import (
    ChecksumError, DataNotFoundError, RemoteFile, data_dir, fetch, leaf_synthetic, load, load_acs_income,
    load_adult, load_cifar10, load_digits, load_medical, load_mnist, make_clients, split_iid, toy_least_squares,
    train_val_split,
)
from flprivacy.data.tabular import STATE_CODES, encode


# ---- data directory and errors ------------------------------------------------------------------
def test_missing_file_error_names_the_file_and_the_fix(empty_data_dir, offline):
    with pytest.raises(DataNotFoundError) as e:
        load_medical()
    msg = str(e.value)
    assert "medical/insurance.csv" in msg and str(empty_data_dir) in msg
    assert "FLPRIVACY_DATA_DIR" in msg and "https://" in msg


def test_nonexistent_data_dir_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setenv("FLPRIVACY_DATA_DIR", str(tmp_path / "nope"))
    with pytest.raises(DataNotFoundError, match="is not a directory"):
        data_dir()


def test_relative_data_dir_resolves_against_project_root(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLPRIVACY_DATA_DIR", "src")
    assert data_dir() == (Path(__file__).resolve().parents[1] / "src")


def test_unknown_dataset_and_file():
    with pytest.raises(ValueError, match="unknown data set 'imagenet'.*medical"):
        load("imagenet")
    with pytest.raises(KeyError, match="not a registered data file"):
        fetch("nope/nothing.csv")


def test_unknown_scale(monkeypatch):
    monkeypatch.setenv("FLPRIVACY_SCALE", "huge")
    with pytest.raises(ValueError, match="not a known scale"):
        config.scale()
    monkeypatch.setenv("FLPRIVACY_SCALE", "paper")
    assert config.at_scale(quick=1, paper=2) == 2


# ---- downloads, against a local HTTP server ------------------------------------------------------
@pytest.fixture
def http_server(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    (served / "table.csv").write_bytes(b"a,b\n1,2\n")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_download_with_matching_checksum(http_server, tmp_path):
    digest = hashlib.sha256(b"a,b\n1,2\n").hexdigest()
    f = RemoteFile("demo/table.csv", f"sha256:{digest}", (f"{http_server}/missing.csv", f"{http_server}/table.csv"))
    root = tmp_path / "data"
    path = fetch(f, root=root)
    assert path == root / "demo/table.csv" and path.read_bytes() == b"a,b\n1,2\n"
    assert fetch(f, root=root, allow_download=False) == path  # now served from disk


def test_download_with_wrong_checksum_leaves_nothing(http_server, tmp_path):
    f = RemoteFile("demo/table.csv", "sha256:" + "0" * 64, (f"{http_server}/table.csv",))
    root = tmp_path / "data"
    with pytest.raises(ChecksumError, match="failed its checksum"):
        fetch(f, root=root)
    assert not (root / "demo").exists() or not any((root / "demo").iterdir())


def test_md5_checksum_and_corrupted_local_file(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x/f.bin").write_bytes(b"hello")
    good = RemoteFile("x/f.bin", "md5:" + hashlib.md5(b"hello").hexdigest())
    assert fetch(good, root=tmp_path) == tmp_path / "x/f.bin"
    with pytest.raises(ChecksumError, match="corrupted"):
        fetch(RemoteFile("x/f.bin", "md5:" + "1" * 32), root=tmp_path)


def test_unreachable_source_reports_the_attempt(tmp_path):
    f = RemoteFile("demo/t.csv", "", ("http://127.0.0.1:9/t.csv",))
    with pytest.raises(DataNotFoundError, match="download failed.*127.0.0.1:9"):
        fetch(f, root=tmp_path)


def test_a_dead_mirror_is_skipped_for_the_next_one(http_server, tmp_path):
    digest = hashlib.sha256(b"a,b\n1,2\n").hexdigest()
    f = RemoteFile("demo/table.csv", f"sha256:{digest}", ("http://127.0.0.1:9/table.csv", f"{http_server}/table.csv"))
    assert fetch(f, root=tmp_path, allow_download=True).read_bytes() == b"a,b\n1,2\n"


def test_offline_means_no_connection_and_says_so(tmp_path, monkeypatch, offline):
    from flprivacy.data import files

    monkeypatch.setattr(files, "reachable", lambda *a, **k: pytest.fail("FLPRIVACY_OFFLINE=1 must not connect"))
    with pytest.raises(DataNotFoundError, match="downloading is off"):
        fetch(RemoteFile("demo/t.csv", "", ("http://127.0.0.1:9/t.csv",)), root=tmp_path)


def test_a_file_replaced_after_its_check_is_checked_again(tmp_path):
    import os

    (tmp_path / "x").mkdir()
    f = tmp_path / "x/f.bin"
    f.write_bytes(b"hello")
    good = RemoteFile("x/f.bin", "sha256:" + hashlib.sha256(b"hello").hexdigest().upper())  # hex in either case
    assert fetch(good, root=tmp_path) == f
    f.write_bytes(b"hellO")
    os.utime(f, (f.stat().st_atime, f.stat().st_mtime + 10))  # a later modification time, as a copy over it gives
    with pytest.raises(ChecksumError, match="corrupted"):
        fetch(good, root=tmp_path)


def test_relative_data_dir_resolves_against_the_current_directory_first(monkeypatch, tmp_path):
    (tmp_path / "src").mkdir()  # a folder named like one at the project root: the current directory's wins
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLPRIVACY_DATA_DIR", "src")
    assert data_dir() == tmp_path.resolve() / "src"


# ---- ACS Income through folktables, on a generated file in the PUMS layout -------------------------
def write_pums(path: Path, n: int = 50, seed: int = 0, blank_cow_every: int | None = None) -> pd.DataFrame:
    """A PUMS person file of ``n`` random rows; with ``blank_cow_every`` = k, every k-th row's
    COW is left blank, as PUMS leaves inapplicable fields."""
    g = torch.Generator().manual_seed(seed)
    r = lambda lo, hi: torch.randint(lo, hi, (n,), generator=g).numpy()  # noqa: E731
    df = pd.DataFrame({
        "RT": "P", "SERIALNO": [f"2018GQ{i:07d}" for i in range(n)], "ST": 22, "PWGTP": r(0, 60),
        "AGEP": r(10, 90), "COW": r(1, 9), "SCHL": r(1, 25), "MAR": r(1, 6), "OCCP": r(10, 9900),
        "POBP": r(1, 60), "RELP": r(0, 18), "WKHP": r(0, 60), "SEX": r(1, 3), "RAC1P": r(1, 10),
        "PINCP": r(-1000, 200000),
    })
    if blank_cow_every:
        df["COW"] = df["COW"].astype(float)
        df.loc[df.index[::blank_cow_every], "COW"] = float("nan")
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False)
    return df


def test_acs_income_parses_a_pums_file(empty_data_dir, offline):
    raw = write_pums(empty_data_dir / "acs_income/2018/1-Year/psam_p22.csv", n=2_500,  # >= ACS_MIN_ROWS
                     blank_cow_every=5)
    df = load_acs_income(["LA"])
    keep = raw[(raw.AGEP > 16) & (raw.PINCP > 100) & (raw.WKHP > 0) & (raw.PWGTP >= 1)]
    assert len(df) == len(keep) > 0
    assert list(df.columns) == ["AGEP", "COW", "SCHL", "MAR", "OCCP", "POBP", "RELP", "WKHP", "SEX", "RAC1P",
                                "ST", "PINCP"]
    assert df.PINCP.tolist() == keep.PINCP.astype(float).tolist()  # raw income, not binarised
    assert (df.COW == -1).sum() == keep.COW.isna().sum() > 0  # folktables codes a blank feature as -1


def test_acs_missing_file_gives_the_fetch_command(empty_data_dir, offline):
    with pytest.raises(DataNotFoundError) as e:
        load_acs_income(["LA", "TX"])
    msg = str(e.value)
    assert "psam_p22.csv" in msg and "psam_p48.csv" in msg and "flprivacy.data fetch-acs" in msg
    assert not (empty_data_dir / "acs_income").exists(), "a failed load must not create folders"
    assert STATE_CODES["LA"] == "22"


def test_book_pages_show_the_data_dir_as_its_variable(empty_data_dir, capsys):
    """The chapters print the loaders' messages without the build machine's data folder."""
    from flprivacy.data.census import acs_available
    from flprivacy.data.files import DataPathsAsVariable, data_dir_as_variable

    with DataPathsAsVariable():
        assert not acs_available(["LA"])
    out = capsys.readouterr().out
    assert "$FLPRIVACY_DATA_DIR/acs_income/2018/1-Year/psam_p22.csv is missing" in out
    assert str(empty_data_dir) not in out
    assert data_dir_as_variable(f"see {empty_data_dir}/x.csv") == "see $FLPRIVACY_DATA_DIR/x.csv"
    with pytest.raises(TypeError, match="text must be a str"):
        data_dir_as_variable(empty_data_dir)


# ---- the real data sets (from FLPRIVACY_DATA_DIR) ---------------------------------------------------------
def test_medical(data_file):
    data_file("medical/insurance.csv")
    df = load_medical()
    assert df.shape == (1338, 7) and set(df.smoker) == {"yes", "no"}


def test_adult(data_file):
    data_file("adult/adult.data")
    tr, te = load_adult("train"), load_adult("test")
    assert len(tr) == 32561 and len(te) == 16281
    assert set(tr.income) == set(te.income) == {"<=50K", ">50K"}
    assert (tr.income == ">50K").sum() == 7841


def test_mnist_test_split(data_file):
    data_file("mnist/t10k-images-idx3-ubyte.gz")
    x, y = load_mnist("test", n=20)
    assert x.shape == (20, 1, 28, 28) and x.min() == 0 and x.max() == 1  # bytes 0..255, both present
    assert y[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]


def test_cifar10_announces_the_jpeg_copy(data_file):
    data_file("cifar10/cifar10_test_decoded_from_jpg.npz")
    if (data_dir() / "cifar10/cifar-10-python.tar.gz").is_file():
        pytest.skip("the original archive is present; no substitute to announce")
    with pytest.warns(UserWarning, match="JPEG-decoded"):
        x, y = load_cifar10("test", n=8)
    assert x.shape == (8, 3, 32, 32) and y.dtype == torch.int64


def test_digits_ship_with_scikit_learn():
    x, y = load_digits(n=10)
    assert x.shape == (10, 1, 8, 8) and x.min() == 0 and x.max() == 1  # scikit-learn's 0..16, both present
    with pytest.raises(ValueError, match="positive number"):
        load_digits(n=-3)


# ---- encoding, splits, synthetic -------------------------------------------------------------------
def test_encode_scales_orders_and_labels():
    """Standardised columns have mean 0 and (population) standard deviation 1; one-hot columns and
    class labels follow the sorted values, not their order of appearance; the target is divided
    by target_scale."""
    df = pd.DataFrame({"age": [20.0, 30.0, 70.0, 40.0], "region": ["s", "n", "s", "e"], "y": [10.0, 20.0, 30.0, 40.0],
                       "label": ["b", "a", "b", "c"]})
    t = encode(df.drop(columns="label"), "y", categorical=["region"], standardize=["age"], target_scale=10.0)
    assert t.feature_names == ["age", "region=e", "region=n", "region=s"]
    assert abs(float(t.X[:, 0].mean())) < 1e-6 and abs(float(t.X[:, 0].std(unbiased=False)) - 1) < 1e-6
    assert t.y.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert encode(df[["age", "label"]], "label").y.tolist() == [1, 0, 1, 2]


def test_encode_groups_columns():
    df = pd.DataFrame({"age": [20, 30, 40], "region": ["n", "s", "n"], "smoker": ["yes", "no", "no"],
                       "y": [1.0, 2.0, 3.0]})
    t = encode(df, "y", categorical=["region"], binary={"smoker": "yes"}, standardize=["age"])
    assert t.feature_names == ["age", "region=n", "region=s", "smoker=yes"]
    assert t.columns("smoker") == [3] and t.columns("region") == [1, 2]
    assert torch.allclose(t.X[:, 0].mean(), torch.tensor(0.0), atol=1e-6)
    with pytest.raises(KeyError, match="not a column"):
        t.columns("sex")


def test_splits():
    parts = split_iid(103, 4, seed=0)
    assert sorted(len(p) for p in parts) == [25, 26, 26, 26]
    assert torch.equal(torch.sort(torch.cat(parts)).values, torch.arange(103))
    c = train_val_split(torch.randn(50, 3), torch.randn(50), 0.1, seed=1)
    assert c.n == 45 and c.X_val.shape[0] == 5
    clients = make_clients(torch.randn(100, 3), torch.randn(100), 2, seed=0)
    assert [c.n for c in clients] == [45, 45]
    with pytest.raises(ValueError, match="cannot split"):
        split_iid(3, 5)


def test_splits_are_random_disjoint_and_sized():
    """split_iid is a random permutation cut into parts (not the rows in order), and ``sizes`` are
    the parts' sizes; train_val_split keeps at least one training row whatever the fraction."""
    parts = split_iid(103, 4, seed=0)
    assert not torch.equal(torch.cat(parts), torch.arange(103))  # the identity has probability 1/103!
    sized = split_iid(50, 3, seed=2, sizes=[10, 20, 5])
    assert [len(p) for p in sized] == [10, 20, 5] and len(set(torch.cat(sized).tolist())) == 35
    c = train_val_split(torch.randn(3, 2), torch.randn(3), 0.9, seed=0)  # round(2.7) = 3 rows asked for
    assert c.n == 1 and c.X_val.shape[0] == 2


def test_sensitive_attribute_candidates_and_fill():
    """A one-hot attribute's candidate k is the k-th unit vector of its columns (indices name
    categories in tables), and fill returns a copy with the values set, leaving its input as it was."""
    from flprivacy.data.attributes import SensitiveAttribute

    att = SensitiveAttribute.one_hot([1, 2, 3])
    X = torch.zeros(3, 5)
    X[0, 1] = X[1, 3] = X[2, 2] = 1.0
    assert torch.equal(att.candidates, torch.eye(3, dtype=torch.float64))
    assert att.true_index(X).tolist() == [0, 2, 1]
    before = X.clone()
    out = att.fill(X, torch.tensor([2, 2, 0]))
    assert torch.equal(X, before)
    assert att.true_index(out).tolist() == [2, 2, 0] and torch.equal(out[:, [0, 4]], X[:, [0, 4]])


def test_synthetic_generators_are_seeded():
    a, b = toy_least_squares(seed=3), toy_least_squares(seed=3)
    assert torch.equal(a.clients[0].X, b.clients[0].X) and a.clients[0].X.shape == (1024, 10)
    assert set(a.clients[0].X[:, a.sensitive_column].tolist()) == {0.0, 1.0}
    assert a.models[0].shape == (11,)
    leaf = leaf_synthetic(seed=0)
    assert [c.n for c in leaf.clients] == [280, 184, 1536, 256, 208]
    assert leaf.clients[0].X.shape[1] == 10 and set(torch.cat([c.y for c in leaf.clients]).tolist()) <= {0, 1}
