"""Memory rows of a case file scored in-sample and under source holdout, overall and by regime.

Usage: python scripts/memory_scores.py [CASES.csv] [--write-band]

Prints, for `validate` without refit and with `--refit source`, the median and 90th percentile of |error| and
the share of rows predicted below the measured peak (the figures a formula change reports before and after).
`--write-band` stores the memory model's measured error band, by regime, in data/memory_error_band.csv
(`planner.formulas.memory.verdict` reads it for the fit verdict): the quantiles of measured / predicted under
source holdout, each source document weighing the same (`source_quantile`), with the command, commit and date
that produced them. The band is never typed in by hand.
"""

from __future__ import annotations

import csv
import datetime as dt
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.cases.case_file import load_case_file  # noqa: E402
from planner.cases.case_scoring import source_of  # noqa: E402
from planner.cases.validate import validate_file  # noqa: E402
from planner.catalogue.catalog import default_catalogs  # noqa: E402
from planner.catalogue.memory_band import band_file  # noqa: E402
from planner.formulas.memory.verdict import HIGH_QUANTILE, LOW_QUANTILE  # noqa: E402

DEFAULT_CASES = ROOT / "data" / "calibration.csv"


def regime_of(row: dict) -> str:
    """The band's regime of a case row: adapters when the trained model is LoRA or QLoRA (the row's method, or
    its policy's under post-training), full otherwise (`planner.formulas.memory.verdict.REGIMES`)."""
    methods = {row.get("method", "").strip().lower(), row.get("policy_method", "").strip().lower()}
    return "adapters" if methods & {"lora", "qlora"} else "full"


def scored_rows(path: Path, refit: str | None) -> list[dict]:
    """Predicted memory rows of `path` with their regime (`regime_of`) and source document (`source_of`)."""
    cases = {row["case_id"]: row for row in load_case_file(path)}
    out = validate_file(path, default_catalogs(), "memory", refit=refit)
    rows = [row for row in out["rows"] if row["rel_error"] is not None]
    return [
        {**row, "regime": regime_of(cases[row["case_id"]]), "source": source_of(cases[row["case_id"]])}
        for row in rows
    ]


def source_quantile(rows: list[dict], q: float) -> float:
    """The q-quantile of measured / predicted with every source document weighing the same.

    The rows of one document share a framework, a machine and a way of reading memory, so they are one draw of
    how far the model misses on a kind of run, not many: 147 runs from one lent GPU would otherwise set the band
    alone. Each row weighs 1 / (rows of its source) within the group; the quantile is the smallest ratio whose
    cumulative weight reaches q of the total."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["source"]] = counts.get(row["source"], 0) + 1
    ordered = sorted(rows, key=lambda row: row["measured"] / row["predicted"])
    weights = np.array([1.0 / counts[row["source"]] for row in ordered])
    cumulative = np.cumsum(weights) / weights.sum()
    index = int(np.searchsorted(cumulative, q - 1e-12))
    return (
        ordered[min(index, len(ordered) - 1)]["measured"] / ordered[min(index, len(ordered) - 1)]["predicted"]
    )


def figures(rows: list[dict]) -> dict[str, float]:
    """n, median and p90 |error| (validate's p90 rule), share predicted low, measured/predicted quantiles."""
    errors = sorted(abs(r["rel_error"]) for r in rows)
    return {
        "n": len(rows),
        "median": float(np.median(errors)),
        "p90": errors[min(len(errors) - 1, int(0.9 * len(errors)))],
        "low": float(np.mean([r["rel_error"] < 0 for r in rows])),
        "ratio_low": source_quantile(rows, LOW_QUANTILE),
        "ratio_high": source_quantile(rows, HIGH_QUANTILE),
    }


def by_regime(rows: list[dict]) -> dict[str, dict[str, float]]:
    groups = {"all": rows}
    for regime in sorted({r["regime"] for r in rows}):
        groups[regime] = [r for r in rows if r["regime"] == regime]
    return {name: figures(group) for name, group in groups.items()}


def write_band(path: Path, table: dict[str, dict[str, float]], cases: Path) -> None:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.strip()
    source = (
        f"scripts/memory_scores.py --write-band on {cases.name} (validate --category memory --refit source)"
        f" at commit {commit or 'unknown'}"
    )
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["regime", "n_rows", "ratio_low", "ratio_high", "source", "as_of"])
        for regime, f in table.items():
            writer.writerow(
                [regime, f["n"], f"{f['ratio_low']:.4f}", f"{f['ratio_high']:.4f}", source, dt.date.today()]
            )


def main(argv: list[str]) -> int:
    paths = [arg for arg in argv if not arg.startswith("--")]
    cases = Path(paths[0]) if paths else DEFAULT_CASES
    print(
        f"{'scoring':15} {'regime':9} {'n':>3} {'median':>7} {'p90':>7} {'low':>5} {'m/p q10':>8} {'q90':>6}"
    )
    if not band_file().exists():  # the band never enters a memory prediction: a neutral one lets it run
        write_band(band_file(), {"all": {"n": 0, "ratio_low": 1.0, "ratio_high": 1.0}}, cases)
    holdout: dict[str, dict[str, float]] = {}
    for label, refit in (("in-sample", None), ("source holdout", "source")):
        table = by_regime(scored_rows(cases, refit))
        holdout = table
        for regime, f in table.items():
            print(
                f"{label:15} {regime:9} {f['n']:3d} {f['median']:7.1%} {f['p90']:7.1%} {f['low']:5.0%} "
                f"{f['ratio_low']:8.3f} {f['ratio_high']:6.3f}"
            )
    if "--write-band" in argv:
        write_band(band_file(), holdout, cases)
        print(f"wrote {band_file().relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
