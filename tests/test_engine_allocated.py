"""A colocated engine's memory in the trainer's allocated statistic, and how case rows state an engine that
sleeps or lengths that are only caps ("a reserved figure is predicted as reserved", for
post-training's phases; the VERL rows)."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.cases import case_words
from planner.cases.case_file import load_case_file
from planner.cases.case_post import _rollout_fields
from planner.formulas.post_training import side_models as post

GB = 1e9
CASES = Path(__file__).resolve().parents[1] / "data" / "calibration.csv"


def _phases(engine: float, sleeps: float) -> post.Phases:
    return post.Phases(
        policy_peak=30 * GB,
        policy_resident=12 * GB,
        value_peak=0.0,
        value_resident=0.0,
        frozen=4 * GB,
        engine=engine,
        engine_sleeps=sleeps,
        fragmentation_frac=0.1,
        overhead=1 * GB,
    )


def test_the_allocated_peak_holds_the_in_process_engine_in_its_phase() -> None:
    # training allocates 30 (policy step) + 4 (frozen) = 34 GB; generating keeps 12 + 4 = 16 GB beside the
    # engine's 40 GB pool = 56 GB: torch.cuda.max_memory_allocated over the step reads 56 GB
    assert post.allocated_peak_bytes(_phases(40 * GB, 1.0)) == pytest.approx(56 * GB)
    # awake through training too: 34 + 40 = 74 GB
    assert post.allocated_peak_bytes(_phases(40 * GB, 0.0)) == pytest.approx(74 * GB)
    # no engine (dedicated generation GPUs): the trainer's 34 GB alone
    assert post.allocated_peak_bytes(_phases(0.0, 0.0)) == pytest.approx(34 * GB)
    # the device phases keep the slack over the trainer's bytes only: 16 × 1.1 + 1 + 40 = 58.6 GB
    assert post.generation_phase_bytes(_phases(40 * GB, 1.0)) == pytest.approx(58.6 * GB)


def test_notes_that_say_the_engine_frees_its_cache() -> None:
    assert case_words.engine_sleeps("enforce_eager, free_cache_engine True (verl default)")
    assert case_words.engine_sleeps("free_cache_engine: true")
    assert case_words.engine_sleeps("vLLM sleep mode on")
    assert not case_words.engine_sleeps("free_cache_engine False")
    assert not case_words.engine_sleeps("gpu_memory_utilization 0.6")


def test_a_row_whose_lengths_are_caps_is_skipped_with_its_reason() -> None:
    rows = {row["case_id"]: row for row in load_case_file(CASES)}
    for case_id in ("VERL-03", "VERL-04"):
        reason = _rollout_fields(rows[case_id], 30_720, [])  # seq_len blank: 2,048 + 28,672
        assert isinstance(reason, str) and "length caps" in reason, case_id
    # VERL-01 states the mean response length, 1,960 tokens, so it is timed with it
    assert not isinstance(_rollout_fields(rows["VERL-01"], 4008, []), str)
    assert rows["VERL-01"]["completion_tokens"] == "1960" and case_words.engine_sleeps(
        rows["VERL-01"]["notes"]
    )
