"""Reading and writing battle files: the hand-written paths joust uses (csv, json) against pandas
doing the same work, side by side in one run, with ratios (pandas / joust: above 1, pandas is slower).

    python bench/io.py [--rows 200000] [--llmfao ../shared/data/llmfao/crowd-comparisons.csv]

Import: the file to records (`service.usecases.importers.common.read_records`, which keeps each row's
line) against `pd.read_csv(dtype=str)` / `pd.read_json(lines=True)` and `to_dict("records")`
(which cannot say the line of a row whose quoted cell spans lines); then the whole parse to
typed verdicts, to show what share reading is. Export: `write_judgements` (csv.writer,
json.dumps per row) against a DataFrame of the same cells written by `to_csv` / `to_json`; and
Parquet through pandas. Progress bar: the export's loop with the bar off, and on (to /dev/null).
Not a test: numbers depend on the machine; the ratios are the point.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from service.usecases import exporters
from service.usecases.importers.battles import parse_battles
from service.usecases.importers.common import read_records
from service.usecases.importers.verdicts import read_row


def best(fn: Callable[[], object], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def rows(n: int) -> list[dict]:
    """Export-shaped judgement rows, as `exporters.judgement_rows` makes them."""
    out = []
    for i in range(n):
        calls = [{"first": 2 * i + 1, "winner": "A", "reason": "A is more complete.", "input_tokens": 311,
                  "output_tokens": 24, "latency_ms": 812.5, "cost_usd": 0.000512},
                 {"first": 2 * i + 2, "winner": "B", "reason": "The second answer is clearer.", "input_tokens": 311,
                  "output_tokens": 22, "latency_ms": 790.0, "cost_usd": 0.000493}]
        out.append({
            "judgement_id": i + 1, "match_id": i + 1, "tournament_id": 1, "seq": i + 1, "key": f"{i:064x}",
            "question_id": f"q{i % 500}", "a_id": 2 * i + 1, "model_a": f"m{i % 7}", "scenario_a": "plain",
            "b_id": 2 * i + 2, "model_b": f"m{(i + 3) % 7}", "scenario_b": "cot", "winner": "model_a",
            "outcome": "A", "consistent": True, "judge": "anthropic/claude-x", "criteria": "overall",
            "template_version": "v1", "order_policy": "both", "input_tokens": 622, "output_tokens": 46,
            "cost_usd": 0.001005, "created_at": 1.7e9 + i, "calls": calls, "time": "2023-11-14T22:13:20+00:00",
            "question": f"Question {i % 500}: which is better, and why?",
            "output_a": "An answer,\nwith a line break and \"quotes\".", "output_b": "Another answer.",
            "label_a": f"m{i % 7}/plain", "label_b": f"m{(i + 3) % 7}/cot", "order": ["a", "b"],
            "reason": "A is more complete.", "len_a": 45, "len_b": 15})
    return out


def ratio(name: str, ours: float, theirs: float, n: int) -> None:
    print(f"  {name:<44} joust {ours:7.3f}s  pandas {theirs:7.3f}s  ratio {theirs / ours:5.2f}  "
          f"({n / ours:,.0f} rows/s)")


def pandas_csv_cells(data: list[dict]) -> pd.DataFrame:
    """The cells the CSV export writes, as one DataFrame (what `to_csv` would be handed)."""
    buffer = io.StringIO()
    exporters.write_judgements(data[:1], "csv", buffer)
    columns = buffer.getvalue().splitlines()[0].split(",")
    cells = []
    for row in data:
        line = {c: row.get(c) for c in columns}
        for i, call in enumerate(row["calls"], start=1):
            line.update({f"call{i}_{k}": call.get(k) for k in ("first", "winner", "reason")})
        line["calls"] = json.dumps(row["calls"], ensure_ascii=False)
        cells.append(line)
    return pd.DataFrame(cells, columns=columns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--llmfao", type=Path,
                        default=Path(__file__).resolve().parents[2] / "shared/data/llmfao/crowd-comparisons.csv")
    args = parser.parse_args()
    n = args.rows
    data = rows(n)
    with tempfile.TemporaryDirectory() as tmp:
        csv_path, jsonl_path = Path(tmp, "j.csv"), Path(tmp, "j.jsonl")
        print(f"export, {n:,} judgements (writing only; the rows are built once)")
        with open(os.devnull, "w") as null:
            t_csv = best(lambda: exporters.write_judgements(data, "csv", null), 1)
            frame = pandas_csv_cells(data)
            t_pd_csv = best(lambda: frame.to_csv(null, index=False), 1)
            ratio("CSV: csv.writer vs DataFrame.to_csv", t_csv, t_pd_csv, n)
            t_build = best(lambda: pandas_csv_cells(data), 1)
            print(f"  (building that DataFrame from the rows first: {t_build:.3f}s more for pandas)")
            t_jsonl = best(lambda: exporters.write_judgements(data, "jsonl", null), 1)
            jframe = pd.DataFrame(data)
            t_pd_jsonl = best(lambda: null.write(jframe.to_json(orient="records", lines=True, force_ascii=False)), 1)
            ratio("JSONL: json.dumps vs DataFrame.to_json", t_jsonl, t_pd_jsonl, n)
            t_bar = best(lambda: exporters.write_judgements(data, "csv", null, progress=False), 1)
            saved, sys.stderr = sys.stderr, null
            try:
                t_bar_on = best(lambda: exporters.write_judgements(data, "csv", null, progress=True), 1)
            finally:
                sys.stderr = saved
            print(f"  CSV with the progress bar drawn: {t_bar_on:.3f}s vs off {t_bar:.3f}s "
                  f"(ratio {t_bar_on / t_bar:.2f})")
        try:
            with open(Path(tmp, "j.parquet"), "wb") as out:
                t_pq = best(lambda: exporters.write_judgements(data, "parquet", out), 1)
            print(f"  Parquet through pandas: {t_pq:.3f}s ({n / t_pq:,.0f} rows/s), "
                  f"{Path(tmp, 'j.parquet').stat().st_size / 1e6:.1f} MB vs CSV's "
                  f"{len(frame.to_csv(index=False).encode()) / 1e6:.1f} MB")
        except exporters.ExportError as exc:
            print(f"  Parquet: {exc}")

        with open(csv_path, "w", newline="") as out:
            exporters.write_judgements(data, "csv", out)
        with open(jsonl_path, "w") as out:
            exporters.write_judgements(data, "jsonl", out)
        print(f"import, {n:,} judgements (the file to records, each with its line)")
        t_read = best(lambda: list(read_records(csv_path, "csv")), 1)
        t_pd_read = best(lambda: pd.read_csv(csv_path, dtype=str, keep_default_na=False).to_dict("records"), 1)
        ratio("CSV: csv.reader vs read_csv+to_dict", t_read, t_pd_read, n)
        t_read_j = best(lambda: list(read_records(jsonl_path, "jsonl")), 1)
        t_pd_read_j = best(lambda: pd.read_json(jsonl_path, lines=True, dtype=False).to_dict("records"), 1)
        ratio("JSONL: json.loads vs read_json+to_dict", t_read_j, t_pd_read_j, n)
        t_parse = best(lambda: [read_row(csv_path, r) for r in read_records(csv_path, "csv")], 1)
        print(f"  the whole CSV parse to typed verdicts: {t_parse:.3f}s; reading is {t_read / t_parse:.0%} of it")

    if args.llmfao.is_file():
        crowd = args.llmfao
        count = len(parse_battles(crowd).rows)
        print(f"LLMFAO crowd votes ({count:,} rows, {crowd.stat().st_size / 1e6:.1f} MB)")
        t_read = best(lambda: list(read_records(crowd, "csv")), 5)
        t_pd = best(lambda: pd.read_csv(crowd, dtype=str, keep_default_na=False).to_dict("records"), 5)
        ratio("CSV: csv.reader vs read_csv+to_dict", t_read, t_pd, count)
        t_parse = best(lambda: parse_battles(crowd), 5)
        print(f"  the whole parse: {t_parse:.3f}s; reading is {t_read / t_parse:.0%} of it")
    else:
        print(f"(no LLMFAO file at {args.llmfao})")


if __name__ == "__main__":
    main()
