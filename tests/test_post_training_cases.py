"""Post-training rows of the case file (and their `validate` scores).

The bundled case file holds 21 published post-training measurements (DeepSpeed-Chat, OpenRLHF, verl, TRL;
data/README.md). Each must be predicted or skipped with a reason; the median |error| of the predicted ones
is printed and held to the issue's 25 %. Older case files, without
the post-training columns, keep validating (DESIGN.md §4).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from planner.cases import case_post
from planner.cases import case_words as words
from planner.cases.case_file import CASE_FILE_COLUMNS, POST_COLUMNS, CaseFileError, load_case_file
from planner.cases.case_gpu import GpuMatcher
from planner.cases.case_predict import evaluated
from planner.cases.case_row import case_scenario
from planner.cases.case_scoring import feeds_presets
from planner.cases.case_words import examples_and_epochs
from planner.cases.validate import post_training_summary, validate_cases, validate_file
from planner.catalogue.catalog import default_catalogs

CATS = default_catalogs()
BUNDLED = Path(__file__).resolve().parent.parent / "data" / "calibration.csv"
OBJECTIVES = ("dpo", "simpo", "orpo", "kto", "reward_model", "ppo", "grpo")


@pytest.fixture(scope="module")
def cases() -> list[dict[str, str]]:
    return load_case_file(BUNDLED)


@pytest.fixture(scope="module")
def report(cases: list[dict[str, str]]) -> dict:
    return validate_cases(cases, CATS)


def _post_rows(cases: list[dict[str, str]]) -> list[dict[str, str]]:
    return [row for row in cases if row["method"] in OBJECTIVES]


def test_every_post_training_row_predicted_or_skipped_with_a_reason(cases, report) -> None:
    post_ids = {row["case_id"] for row in _post_rows(cases)}
    assert len(post_ids) == 21  # the post-training rows (data/README.md, "Post-training rows")
    results = [r for r in report["rows"] if r["case_id"] in post_ids]
    assert len(results) == 21
    for result in results:
        if result["predicted"] is None:
            assert result["skipped_reason"] and len(result["skipped_reason"]) > 20, result
        else:
            assert result["predicted"] > 0 and result["skipped_reason"] is None
    predicted = sorted(abs(r["rel_error"]) for r in results if r["rel_error"] is not None)
    # DSC-07..11 and TRL-01 have every figure the model needs; DSC-01/03/04/05 take their batch from the
    # DeepSpeed-Chat script e2e_rlhf.py runs for them (data/README.md); ORLHF-01..05 put each model on GPUs of its own
    assert len(predicted) >= 10
    group = post_training_summary(report["rows"], cases)
    assert group["n"] == 21 and group["n_skipped"] == 21 - len(predicted)
    middle = len(predicted) // 2
    expected = predicted[middle] if len(predicted) % 2 else (predicted[middle - 1] + predicted[middle]) / 2
    assert group["median_abs_rel_error"] == pytest.approx(expected)
    print(f"post-training rows: {len(predicted)} predicted, median |error| {expected:.1%} (target 25 %)")
    # the post-training target: 24.3 % over DSC-07..11 and TRL-01 when this was written, 23.5 % with DSC-01/03/04/05,
    # 24.1 % with the verl H20 rows (VERL-01 -55 %, -02 -34 %, -03 +1,896 %, -04 +1,007 %: see data/README.md)
    assert expected <= 0.25


def test_rl_step_row_is_read_as_one_rollout_step(cases) -> None:
    """DSC-07 (PPO, s/iteration): the prediction is the whole rollout step (generation, scoring, training),
    so it is the Estimate's post_step_time_s and more than the policy's optimizer step alone."""
    row = next(r for r in cases if r["case_id"] == "DSC-07")
    made = case_scenario(row, CATS, GpuMatcher(CATS))
    assert not isinstance(made, str)
    scenario, _ = made
    assert (scenario.post_training, scenario.method) == ("ppo", "full")
    assert scenario.tokens_per_example == 512 and scenario.completion_tokens == 256  # 256 prompt + 256 answer
    assert scenario.rollout_prompts == 64 and scenario.reward_model == "GPT-2 medium"
    _, out = evaluated(scenario, CATS)
    result = validate_cases([row], CATS)["rows"][0]
    assert result["predicted"] == pytest.approx(float(out["post_step_time_s"]))
    assert float(out["post_step_time_s"]) > 2 * float(out["step_time_s"])


def test_policy_method_and_objective_columns() -> None:
    blank = dict.fromkeys(CASE_FILE_COLUMNS, "")
    lora_dpo = {**blank, "method": "dpo", "policy_method": "lora"}
    assert case_post.objective(lora_dpo) == "dpo" and case_post.policy_method(lora_dpo) == "lora"
    sft = {**blank, "method": "qlora", "policy_method": "full"}  # an SFT row: method is how it trains
    assert case_post.objective(sft) == "sft" and case_post.policy_method(sft) == "qlora"


def test_side_model_given_in_billions() -> None:
    notes: list[str] = []
    # GPT-2 medium: 354,823,168 parameters (models.csv), 7.2 % above OPT-350M's 0.331B, within 10 %
    assert case_post.side_model("reward_model", "0.331", 1.316, CATS, notes) == "GPT-2 medium"
    # 7B beside a 6.74B policy: 3.9 % off, read as the policy's own shape ("")
    assert case_post.side_model("value_model", "7", 6.74, CATS, notes) == ""
    # 0.2B: the nearest presets (GPT-2 small 0.124B, medium 0.355B) are 38 % and 77 % off
    assert case_post.side_model("reward_model", "0.2", 6.74, CATS, notes) is None
    assert case_post.side_model("reward_model", "none", 6.74, CATS, notes) == "none"


def test_run_length_from_the_notes() -> None:
    assert examples_and_epochs("run length: 14k examples, 3 epochs (inferred)") == (14_000, 3.0)
    assert examples_and_epochs("264,292 prompts x 1 epoch") == (264_292, 1.0)
    assert examples_and_epochs("50k PPO samples, epochs not stated") is None


def test_post_training_rows_do_not_feed_the_presets(cases) -> None:
    for row in _post_rows(cases):
        assert not feeds_presets(row), row["case_id"]
    assert any(feeds_presets(row) for row in cases if row["method"] in ("full", "lora", "qlora"))


def _write(path: Path, header: list[str], rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_case_file_without_post_training_columns_still_validates(tmp_path: Path, cases, report) -> None:
    old_header = [column for column in CASE_FILE_COLUMNS if column not in POST_COLUMNS]
    assert len(old_header) == 37  # the header before the post-training columns
    sft = [row for row in cases if row["method"] not in OBJECTIVES][:6]
    old = validate_file(_write(tmp_path / "old.csv", old_header, sft), CATS)
    bundled = {r["case_id"]: r for r in report["rows"]}
    assert [r["case_id"] for r in old["rows"]] == [row["case_id"] for row in sft]
    for result in old["rows"]:
        assert result["predicted"] == bundled[result["case_id"]]["predicted"]
    assert post_training_summary(old["rows"], sft)["n"] == 0


@pytest.mark.parametrize(
    ("column", "cell", "says"),
    [
        ("generation_gpus", "-1", "whole number >= 0"),
        ("generation_gpus", "1.5", "whole number >= 0"),
        ("generation_memory_frac", "1.5", "share in (0, 1]"),
        ("prompt_tokens", "abc", "not a number > 0"),
        ("samples_per_prompt", "2.5", "not a whole number"),
        ("reference", "twin", "copy, offload, base, precomputed, none"),
        ("policy_method", "dora", "full, lora, qlora"),
    ],
)
def test_bad_post_training_cells_are_named(tmp_path: Path, cases, column: str, cell: str, says: str) -> None:
    row = {**next(r for r in cases if r["case_id"] == "DSC-07"), column: cell}
    path = _write(tmp_path / "bad.csv", list(CASE_FILE_COLUMNS), [row])
    with pytest.raises(CaseFileError) as err:
        load_case_file(path)
    assert f"line 2, column {column}" in str(err.value) and says in str(err.value)


def test_generation_engine_and_model_placement_columns(cases) -> None:
    """DSC-07 ran DeepSpeed-Chat's hybrid engine (eager kernels, no CUDA graphs): the column says so and the
    rollout waits for the CPU's launches; OpenRLHF's per-model GPUs are refused with the reason."""
    row = next(r for r in cases if r["case_id"] == "DSC-07")
    made = case_scenario(row, CATS, GpuMatcher(CATS))
    assert not isinstance(made, str) and made[0].generation_engine == "eager"
    eager = evaluated(made[0], CATS)[1]
    graphs = evaluated(made[0].updated(generation_engine="vllm"), CATS)[1]
    # OPT-1.3B's 24 layers × 103 µs per layer and decode step, 256 decode steps per round
    extra_s = float(eager["step_generation_s"]) - float(graphs["step_generation_s"])
    rounds = 1.0  # 4 sequences per GPU all fit at once
    assert extra_s == pytest.approx(rounds * 256 * 24 * 3.3e-3 / 32, rel=1e-6)
    separate = next(r for r in cases if r["case_id"] == "ORLHF-05")
    reason = case_scenario(separate, CATS, GpuMatcher(CATS))
    assert isinstance(reason, str) and "GPUs of its own" in reason


@pytest.mark.parametrize(
    ("notes", "on"),
    [
        ("Model dropout 0.1: OPT's config default", True),
        ("--dropout 0.0 --seed 1234", False),
        ("dropout 0", False),
        ("lora_dropout 0.05 on the adapters", None),
        ("no word about it", None),
    ],
)
def test_dropout_the_notes_state(notes: str, on: bool | None) -> None:
    assert words.dropout_on(notes) is on


def test_a_stated_dropout_keeps_its_masks(cases) -> None:
    """DSC-10 (OPT-350M reward model, dropout 0.1 kept from OPT's config): the masks raise the peak."""
    row = next(r for r in cases if r["case_id"] == "DSC-10")
    made = case_scenario(row, CATS, GpuMatcher(CATS))
    assert not isinstance(made, str) and made[0].dropout
    with_masks = evaluated(made[0], CATS)[1]["allocated_peak_bytes"]
    without = evaluated(made[0].updated(dropout=False), CATS)[1]["allocated_peak_bytes"]
    assert float(with_masks) > float(without)


def test_a_gptq_based_qlora_row_is_scored_but_feeds_no_preset(cases) -> None:
    """The QLoRA presets are NF4's (torchtune rows); Qwen's Q-LoRA rows run over GPTQ int4 checkpoints, whose
    kernels are another family's: scored by validate, but their speed never sets the NF4 presets."""
    by_id = {row["case_id"]: row for row in cases}
    for case_id in ("QWEN-QL-1", "QWEN-QL-2", "QWEN-QL-3"):
        assert "GPTQ" in by_id[case_id]["precision"] and not feeds_presets(by_id[case_id])
    assert feeds_presets(by_id["TTU31-5-tps"]) and feeds_presets(by_id["TTU32-10-tps"])  # NF4 QLoRA
