"""Training logs imported to their figures: one fixture per trainer, written in that trainer's own format.

Each fixture in tests/data/runs/ follows the format string the parser cites (planner/runs/formats.py and
hf_trainer.py, pinned commits); the expected figures are worked out by hand beside each test. Rates are the
mean of the logged windows after the first (warm-up), memory the largest value, in GiB.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from planner.cases.case_file import load_case_file
from planner.cli.main import main
from planner.runs.case_rows import case_rows, missing_for_prediction
from planner.runs.column_map import parse_column_map
from planner.runs.importer import import_runs
from planner.runs.record import RunLogError

DATA = Path(__file__).parent / "data" / "runs"


def _one(*names: str, columns: str = "") -> dict[str, float]:
    (record,) = import_runs([DATA / name for name in names], parse_column_map(columns))
    return record.figures


def test_hf_trainer_state_with_config_and_arguments() -> None:
    (record,) = import_runs([DATA / "trainer_state.json", DATA / "config.json", DATA / "training_args.json"])
    assert record.log_format == "hf_trainer_state"
    # final entry: train_runtime 640 s, 10 samples/s, 0.3125 steps/s -> 3.2 s per step; global_step 200
    assert record.figures["wall_clock_s"] == pytest.approx(640.0)
    assert record.figures["samples_per_s_total"] == pytest.approx(10.0)
    assert record.figures["step_time_s"] == pytest.approx(3.2)
    assert record.figures["n_steps"] == 200
    assert record.config["hidden"] == "4096" and record.config["n_kv_heads"] == "8"
    assert record.config["micro_batch"] == "4" and record.config["grad_accum"] == "8"
    assert record.config["precision"] == "bf16" and record.config["activation_ckpt"] == "full"
    assert "seq_len" not in record.config  # max_position_embeddings is not the run's sequence length
    assert "peak allocated memory (GiB)" in record.missing()


def test_torchtune_metric_log() -> None:
    figures = _one("torchtune_log.txt")
    # tokens/s per GPU: mean of steps 2-4 = (3000 + 3200 + 3400) / 3; memory: the largest of each statistic
    assert figures["tokens_per_s_per_gpu"] == pytest.approx(3200.0)
    assert figures["peak_active_gib"] == pytest.approx(18.75)
    assert figures["peak_allocated_gib"] == pytest.approx(18.70)
    assert figures["peak_reserved_gib"] == pytest.approx(20.50)
    assert figures["n_steps"] == 4


def test_torchtitan_console_log_with_colours() -> None:
    figures = _one("torchtitan.log")
    # windows after the first: tps (6800 + 7000) / 2, tflops (393.80 + 405.40) / 2, mfu (39.82 + 40.99) / 2 %
    assert figures["tokens_per_s_per_gpu"] == pytest.approx(6900.0)
    assert figures["tflops_per_gpu_model"] == pytest.approx(399.6)
    assert figures["mfu_frac"] == pytest.approx(0.40405)
    assert figures["peak_reserved_gib"] == pytest.approx(55.61)  # torchtitan's memory: is max reserved
    assert "peak_allocated_gib" not in figures
    assert figures["n_steps"] == 20


def test_megatron_console_log() -> None:
    figures = _one("megatron.log")
    # (6000 + 6200) / 2 ms after the first window; TFLOP/s (450.0 + 435.5) / 2; MB are MiB: 51200 / 1024
    assert figures["step_time_s"] == pytest.approx(6.1)
    assert figures["tflops_per_gpu_model"] == pytest.approx(442.75)
    assert figures["peak_allocated_gib"] == pytest.approx(50.0)
    assert figures["peak_reserved_gib"] == pytest.approx(56.0)


def test_deepspeed_throughput_and_memory_lines() -> None:
    figures = _one("deepspeed.log")
    # the last running average; MaxMemAllocated and Max_MA peak 25.5 GB (2^30), Max_CA peaks at 28
    assert figures["samples_per_s_total"] == pytest.approx(21.25)
    assert figures["peak_allocated_gib"] == pytest.approx(25.5)
    assert figures["peak_reserved_gib"] == pytest.approx(28.0)
    assert figures["n_steps"] == 20


def test_deepspeed_memory_line_of_newer_releases_with_bars(tmp_path) -> None:
    # see_memory_usage joins its fields with " | " in newer DeepSpeed (deepspeed/runtime/utils.py)
    from planner.runs.formats import DEEPSPEED_MEMORY

    line = "[INFO] [utils.py:781:see_memory_usage] MA 3.5 GB | Max_MA 7.25 GB | CA 8.0 GB | Max_CA 9 GB | NV 10.1 GB"
    found = DEEPSPEED_MEMORY.search(line)
    assert found is not None and [float(g) for g in found.groups()] == [3.5, 7.25, 8.0, 9.0]


def test_wandb_csv_through_a_column_map() -> None:
    columns = (
        "step_time_s=perf/step_time_ms*0.001,tokens_per_s_per_gpu=perf/tokens_per_gpu,"
        "peak_allocated_gib=gpu_mem_alloc_bytes*9.313225746154785e-10,n_steps=Step"
    )
    figures = _one("wandb_export.csv", columns=columns)
    # rows 2 and 4 after the first (row 3 blank, as W&B leaves unlogged steps): (1000 + 1100) / 2 ms
    assert figures["step_time_s"] == pytest.approx(1.05)
    assert figures["tokens_per_s_per_gpu"] == pytest.approx(8900.0)
    assert figures["peak_allocated_gib"] == pytest.approx(22.0)  # 23622320128 bytes / 2^30
    assert figures["n_steps"] == 4


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("foreign.bin", "not a training log we can read"),
        ("torn_trainer_state.json", "torn or not JSON"),
        ("wandb_export.csv", "needs --columns"),
        ("config.json", "exactly one trainer_state.json"),
    ],
)
def test_foreign_or_torn_file_gives_one_line_and_exit_2(
    name: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["runs", "import", str(DATA / name)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err and name in err


def test_case_rows_are_a_valid_case_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cases.csv"
    code = main(["runs", "import", str(DATA / "megatron.log"), "--set", "gpu=H100 80GB SXM", "--set",
                 "n_gpus=8", "--cases-out", str(out), "--format", "json"])  # fmt: skip
    assert code == 0
    report = json.loads(capsys.readouterr().out)[0]
    assert report["case_rows"] == 4 and "gpu" not in report["missing_for_prediction"]
    rows = {row["measured_unit"]: row for row in load_case_file(out)}  # the validate reader accepts it
    assert float(rows["s_per_iteration"]["measured_value"]) == pytest.approx(6.1)
    assert float(rows["gib_peak_reserved_per_gpu"]["measured_value"]) == pytest.approx(56.0)
    assert rows["tflops_per_gpu_model"]["category"] == "throughput"
    assert rows["gib_peak_allocated_per_gpu"]["gpu"] == "H100 80GB SXM"


def test_bad_set_column_is_named() -> None:
    (record,) = import_runs([DATA / "megatron.log"])
    with pytest.raises(RunLogError, match="--set gpus"):
        case_rows(record, {"gpus": "8"}, "R1")
    with pytest.raises(RunLogError, match="n_gpus"):
        case_rows(record, {"n_gpus": "eight"}, "R1")
    assert missing_for_prediction(record, {"params_b": "7"})[0] == "n_layers"


MEGATRON_LINE = (
    " [2026-11-03 10:01:02] iteration {step:8d}/ 1000000 | consumed samples:          640 | elapsed time per "
    "iteration (ms): {ms:.1f} | throughput per GPU (TFLOP/s/GPU): 300.0 | learning rate: 3.000000E-05 | "
    "global batch size:    64 | lm loss: 9.120000E+00 | loss scale: 1.0 | grad norm: 3.210 |\n"
)
RSS_PROBE = """
import resource, sys
from pathlib import Path
from planner.runs.importer import import_runs
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
shares = []
(record,) = import_runs([Path(sys.argv[1])], progress=shares.append)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(before, after, record.figures["step_time_s"], record.n_lines, len(shares), shares[-1])
"""


def test_a_100_mb_log_imports_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    block = "".join(MEGATRON_LINE.format(step=i, ms=1000.0 + (i % 2) * 200) for i in range(1, 1001))
    with path.open("w") as handle:
        while handle.tell() < 100 * 2**20:
            handle.write(block)
    probe = subprocess.run([sys.executable, "-c", RSS_PROBE, str(path)], capture_output=True, text=True,
                           check=True, cwd=Path(__file__).parent.parent)  # fmt: skip
    before_kib, after_kib, step_s, n_lines, n_progress, last = probe.stdout.split()
    # ru_maxrss is in KiB on Linux: reading 100 MB may grow the peak by the read buffers only, not the file
    assert int(after_kib) - int(before_kib) < 16 * 1024
    assert int(n_lines) > 300_000 and int(n_progress) > 5 and float(last) == 1.0
    # steps alternate 1000 / 1200 ms (the first window, 1200, is skipped): mean close to 1.1 s
    assert float(step_s) == pytest.approx(1.1, abs=0.001)


def test_cases_out_header_is_the_case_format(tmp_path: Path) -> None:
    out = tmp_path / "c.csv"
    assert main(["runs", "import", str(DATA / "torchtune_log.txt"), "--cases-out", str(out)]) == 0
    with out.open() as handle:
        header = next(csv.reader(handle))
    assert header[:3] == ["case_id", "category", "source"] and "measured_unit" in header


def test_column_map_given_as_text_as_the_app_passes_it() -> None:
    (record,) = import_runs([DATA / "wandb_export.csv"], "tokens_per_s_per_gpu=perf/tokens_per_gpu")
    assert record.figures["tokens_per_s_per_gpu"] == pytest.approx(8900.0)
    with pytest.raises(RunLogError, match="not FIGURE=COLUMN"):
        import_runs([DATA / "wandb_export.csv"], "tokens=perf/tokens_per_gpu")


def test_imported_rows_are_predicted_by_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cases.csv"
    settings = {"params_b": "8.03", "n_layers": "32", "hidden": "4096", "n_heads": "32", "n_kv_heads": "8",
                "ffn_hidden": "14336", "vocab": "128256", "gpu": "H100 SXM", "n_gpus": "8", "dp": "8",
                "seq_len": "4096", "micro_batch": "1", "global_batch": "64", "method": "full",
                "precision": "bf16"}  # fmt: skip
    flags = [word for column, value in settings.items() for word in ("--set", f"{column}={value}")]
    assert main(["runs", "import", str(DATA / "megatron.log"), *flags, "--cases-out", str(out)]) == 0
    capsys.readouterr()
    assert main(["validate", "--cases", str(out), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert len(rows) == 4 and all(row["skipped_reason"] is None for row in rows)
    measured = {row["measured_unit"]: row["measured"] for row in rows}
    assert measured["s_per_iteration"] == pytest.approx(6.1) and measured["gib_peak_reserved_per_gpu"] == 56.0
