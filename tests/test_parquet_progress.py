"""Parquet in and out of `joust import battles` / `joust export` (through pandas and pyarrow),
with errors that name the file and row; and the progress bars of long imports and exports,
drawn on stderr only when asked (`--progress`) or when stderr is a terminal. Real SQLite files."""
from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd
import pytest

from service.cli import main
from service.store import Store
from tests.required import require_module

BATTLES = ("question_id,question,model_a,model_b,winner,output_a,output_b\n"
           "q1,Tea?,m1,m2,model_a,tea,coffee\nq1,Tea?,m2,m3,tie,coffee,water\n"
           "q2,Cats?,m1,m3,model_b,cats,dogs\nq2,Cats?,m1,m2,tie (bothbad),cats,mice\n")


@pytest.fixture(autouse=True)
def _sqlite_in_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("JOUST_DATA_DIR", raising=False)


def joust(data_dir: Path, *args: str) -> int:
    return main([*args, "--data-dir", str(data_dir)])


def board(data_dir: Path, capsys: pytest.CaptureFixture[str], *args: str) -> list[dict]:
    capsys.readouterr()
    assert joust(data_dir, "export", "board", "--format", "csv", *args) == 0
    return list(csv.DictReader(io.StringIO(capsys.readouterr().out)))


def test_a_parquet_battle_file_imports_as_its_csv_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_module("pyarrow", "pyarrow")
    (tmp_path / "votes.csv").write_text(BATTLES)
    pd.read_csv(tmp_path / "votes.csv", dtype=str).to_parquet(tmp_path / "votes.parquet", index=False)
    assert joust(tmp_path / "from-csv", "import", "battles", str(tmp_path / "votes.csv"), "--judge", "crowd") == 0
    assert joust(tmp_path / "from-pq", "import", "battles", str(tmp_path / "votes.parquet"), "--judge", "crowd") == 0
    assert "judgements 4 new, 0 existing" in capsys.readouterr().out
    expected = board(tmp_path / "from-csv", capsys)
    assert len(expected) == 3 and board(tmp_path / "from-pq", capsys) == expected


def test_a_bad_parquet_row_is_named_and_nothing_is_stored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_module("pyarrow", "pyarrow")
    frame = pd.read_csv(io.StringIO(BATTLES), dtype=str)
    frame.loc[2, "winner"] = "maybe"
    frame.to_parquet(tmp_path / "bad.parquet", index=False)
    assert joust(tmp_path / "d", "import", "battles", str(tmp_path / "bad.parquet")) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"joust import: {tmp_path / 'bad.parquet'}:3: ") and "maybe" in err
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    assert joust(tmp_path / "d", "import", "battles", str(tmp_path / "junk.parquet")) == 2
    assert "not a Parquet file" in capsys.readouterr().err
    store = Store(f"sqlite:///{tmp_path / 'd' / 'joust.db'}")
    assert store.revision() == 0
    store.close()


def nulls_as_none(frame: pd.DataFrame) -> pd.DataFrame:
    """Object cells with every null as None (CSV reads an empty cell as NaN, Parquet keeps None)."""
    return frame.astype(object).where(frame.notna(), None)


def test_an_export_to_parquet_is_the_csv_export_typed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_module("pyarrow", "pyarrow")
    (tmp_path / "votes.csv").write_text(BATTLES)
    data = tmp_path / "data"
    assert joust(data, "import", "battles", str(tmp_path / "votes.csv")) == 0
    for what in ("judgements", "board"):
        assert joust(data, "export", what, "--format", "csv", "-o", str(tmp_path / f"{what}.csv")) == 0
        assert joust(data, "export", what, "--format", "parquet", "-o", str(tmp_path / f"{what}.parquet")) == 0
        from_csv = pd.read_csv(tmp_path / f"{what}.csv")
        from_pq = pd.read_parquet(tmp_path / f"{what}.parquet")
        shared = [c for c in from_pq.columns if c in from_csv.columns]
        assert len(shared) == len(from_pq.columns) and len(from_pq) == len(from_csv) > 0
        pd.testing.assert_frame_equal(nulls_as_none(from_pq[shared]), nulls_as_none(from_csv[shared]),
                                      check_dtype=False)
    assert pd.read_parquet(tmp_path / "judgements.parquet")["input_tokens"].dtype == "int64"


def test_progress_bars_only_when_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "votes.csv").write_text(BATTLES)
    data = tmp_path / "data"
    assert joust(data, "import", "battles", str(tmp_path / "votes.csv"), "--progress") == 0
    err = capsys.readouterr().err
    assert "reading votes.csv: " in err and "4 rows" in err
    assert joust(data, "export", "judgements", "-o", str(tmp_path / "out.csv"), "--progress") == 0
    err = capsys.readouterr().err
    assert "exporting judgements: 100%" in err and "| 4/4 " in err
    assert joust(data, "export", "judgements", "-o", str(tmp_path / "out.csv")) == 0  # stderr is no terminal here
    assert joust(tmp_path / "again", "import", "battles", str(tmp_path / "votes.csv")) == 0
    assert capsys.readouterr().err == ""
