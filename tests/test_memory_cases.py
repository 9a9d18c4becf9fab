"""Case rows → Scenario: the keyword vocabulary, the one table of blank-cell defaults, skips, memory read-outs.

planner/cases/case_words.py reads the free text, planner/cases/case_row.py builds the Scenario, and the memory
statistic comes from resolve → evaluate (planner/cases/case_predict.py), the path of `planner.estimate`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.cases.case_defaults import BLANK_DEFAULTS
from planner.cases.case_file import CASE_FILE_COLUMNS, load_case_file
from planner.cases.case_gpu import GpuMatcher
from planner.cases.case_predict import predict_case
from planner.cases.case_row import case_scenario
from planner.cases.case_words import (
    read_offload,
    read_optimizer,
    read_precision,
    read_recompute,
    read_sharding,
)
from planner.cases.validate import validate_cases
from planner.catalogue.catalog import default_catalogs

CATS = default_catalogs()  # black-box validation: the shipped catalogues and presets

CASES = Path(__file__).resolve().parents[1] / "data" / "calibration.csv"  # copy of shared/reference/

LLAMA_8B_ROW = {
    "case_id": "toy-8b",
    "category": "memory",
    "model": "Llama 3.1 8B",
    "params_b": "8.03",
    "n_layers": "32",
    "hidden": "4096",
    "n_heads": "32",
    "n_kv_heads": "8",
    "ffn_hidden": "14336",
    "vocab": "128256",
    "seq_len": "8192",
    "micro_batch": "2",
    "global_batch": "16",
    "method": "full",
    "optimizer": "AdamW",
    "precision": "bf16 mixed",
    "zero_stage_or_fsdp": "FSDP2 (fully_shard, 8-way)",
    "tp": "1",
    "pp": "1",
    "dp": "8",
    "cp": "1",
    "activation_ckpt": "selective (per-op SAC)",
    "flash_attn": "yes (PyTorch SDPA)",
    "n_gpus": "8",
    "measured_value": "82.4",
    "measured_unit": "gib_peak_reserved_per_gpu",
    "notes": "",
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("bf16 mixed", "bf16_mixed"),
        ("bf16 mixed + float8 linears (tensorwise)", "fp8_mixed"),
        ("bf16 (pure bf16 weights), NF4 base weights", "bf16_pure"),
        ("fp16 AMP", "fp16_mixed"),
        ("mixed precision (16-bit)", "fp16_mixed"),  # Korthikanti et al.: fp16 with fp32 master weights
        ("fp8 (TE) + bf16", "fp8_mixed"),
        ("", None),  # blank: the defaults table decides (fp32 on one stated GPU, else bf16 mixed)
    ],
)
def test_read_precision(text, expected):
    assert read_precision(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("AdamW", "adamw"),
        ("8-bit AdamW (optimizer_in_bwd)", "adamw_8bit"),
        ("PagedAdamW8bit (bitsandbytes)", "paged_adamw_8bit"),  # paging is modelled
        ("SGD with momentum", "sgd_momentum"),
        ("Adafactor", "adafactor"),
    ],
)
def test_read_optimizer(text, expected):
    assert read_optimizer(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("FSDP2 (fully_shard, 8-way)", (3, False, False)),
        ("FSDP + fsdp_cpu_offload", (3, False, True)),
        ("DeepSpeed ZeRO-3 + CPU offload", (3, False, True)),
        ("ZeRO-1", (1, False, False)),
        ("SHARD_GRAD_OP", (2, False, False)),
        ("HYBRID_SHARD (FSDP)", (3, True, False)),
        ("none (single GPU)", (0, False, False)),
        ("", (None, False, False)),  # blank: ZeRO-0 on one GPU, ZeRO-1 on more (the defaults table)
    ],
)
def test_read_sharding(text, expected):
    assert read_sharding(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # DeepSpeed ZeRO-Offload (stage 2, offload_optimizer / cpu_offload): optimizer states and step on the
        # host, parameters stay on the GPU (the ZO-1 row's configuration)
        ("ZeRO-2 + offload_optimizer (cpu_offload: true)", (True, False)),
        ("ZeRO-2 + Adam offload", (True, False)),
        ("ZeRO-Offload (stage 2)", (True, False)),
        # FSDP's CPUOffload and DeepSpeed's offload_param move parameters and optimizer states together
        ("FSDP + fsdp_cpu_offload", (True, True)),
        ("DeepSpeed ZeRO-3 + CPU offload", (True, True)),
        ("Megatron (param/grad/optimizer offload True)", (True, True)),
        ("ZeRO-3 + offload_param + offload_optimizer", (True, True)),
        ("FSDP FULL_SHARD", (False, False)),
        ("", (False, False)),
    ],
)
def test_read_offload(text, expected):
    assert read_offload(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("none", ("none", False)),
        ("", ("none", False)),
        ("selective", ("selective", False)),
        ("selective (per-op SAC)", ("selective_op", False)),
        ("full (recipe default)", ("full", False)),
        ("full + activation offloading to CPU", ("full", True)),
    ],
)
def test_read_recompute(text, expected):
    assert read_recompute(text) == expected


def scenario_of(row):
    cats = default_catalogs()
    made = case_scenario({**{column: "" for column in CASE_FILE_COLUMNS}, **row}, cats, GpuMatcher(cats))
    return made


def test_row_maps_to_a_scenario():
    scenario, facts = scenario_of(LLAMA_8B_ROW)
    assert (scenario.zero_stage, scenario.dp, scenario.recompute) == (3, 8, "selective_op")
    shape = scenario.model_shape
    assert (shape.mlp_kind, shape.tied_embeddings) == ("swiglu", False)  # the count closest to 8.03 B
    assert scenario.grad_accum == 1  # global 16 / (micro-batch 2 × dp 8)
    assert scenario.flash_attention and not scenario.fused_cross_entropy
    # no GPU stated: no GPU figure enters the memory model, so the catalogue's first GPU stands in
    assert scenario.gpu == "H100 SXM" and "stands in" in facts.assumptions[0]
    assert (facts.statistic, facts.measured_value) == ("reserved", 82.4)


def test_zero_offload_row_offloads_the_optimizer_alone_and_full_shard_offload_both():
    # ZO-1 (DeepSpeed's ZeRO-Offload tutorial, ZeRO-2 + cpu_offload) keeps the fp16
    # parameters on the GPU and moves the optimizer states and Adam step to the host; TTU31-6 (torchtune's
    # fsdp_cpu_offload, FSDP CPUOffload) moves both. Reading any "offload" as both put ZO-1's parameters on the host.
    rows = {row["case_id"]: row for row in load_case_file(CASES)}
    zo, _ = scenario_of(rows["ZO-1"])
    assert (zo.zero_stage, zo.offload_optimizer, zo.offload_params) == (2, True, False)
    assert zo.offload_activations  # DeepSpeed cpu_checkpointing: the checkpoints live on the host
    fsdp, _ = scenario_of(rows["TTU31-6-tps"])
    assert (fsdp.zero_stage, fsdp.offload_optimizer, fsdp.offload_params) == (3, True, True)


def test_blank_micro_batch_is_one_unless_the_notes_split_the_batch_per_stage():
    # pp 8, dp 8, global batch 256 sequences, micro-batch unstated: 1 (accumulate 32); torchtitan's tables
    # say the batch is split into PP micro-batches: 8 micro-batches of 4 per step.
    row = {**LLAMA_8B_ROW, "micro_batch": "", "pp": "8", "dp": "8", "n_gpus": "64", "global_batch": "256"}
    scenario, facts = scenario_of(row)
    assert (scenario.micro_batch, scenario.grad_accum) == (1, 32)
    assert any(line.startswith("micro_batch not stated") for line in facts.assumptions)
    split, _ = scenario_of({**row, "notes": "local batch 32 per DP rank (split into PP microbatches)"})
    assert (split.micro_batch, split.grad_accum) == (4, 8)


def test_one_default_per_blank_cell_for_every_category():
    # The same blank cells give the same Scenario whether the row is a memory or a throughput row.
    blank = {**LLAMA_8B_ROW, "precision": "", "flash_attn": "", "zero_stage_or_fsdp": "", "n_gpus": "8"}
    memory, _ = scenario_of(blank)
    speed, _ = scenario_of({**blank, "category": "throughput", "measured_unit": "tokens_per_s_per_gpu",
                            "gpu": "H100 80GB SXM"})  # fmt: skip
    assert memory.model_dump() == speed.model_dump()
    assert (memory.precision, memory.flash_attention, memory.zero_stage) == ("bf16_mixed", True, 1)
    alone, _ = scenario_of({**blank, "n_gpus": "1", "dp": "1"})
    assert (alone.precision, alone.zero_stage) == ("fp32", 0)  # one stated GPU: PyTorch's default dtype
    assert all(entry.reason for entry in BLANK_DEFAULTS.values())


def test_chunked_loss_read_from_notes_or_loss_column():
    for extra in ({"notes": "packed, compile, chunked CE"}, {"loss": "chunked cross-entropy"}):
        scenario, _ = scenario_of({**LLAMA_8B_ROW, **extra})
        assert scenario.fused_cross_entropy


@pytest.mark.parametrize(
    ("change", "reason_word"),
    [
        ({"measured_unit": "gb_upper_bound_per_gpu"}, "upper bound"),
        ({"notes": "no packing, Alpaca samples"}, "unpacked"),
        ({"hidden": ""}, "hidden"),
        ({"active_params_b": "1.2"}, "mixture-of-experts"),
        ({"dp": "", "n_gpus": "6", "tp": "4"}, "inconsistent configuration"),
    ],
)
def test_skip_reasons(change, reason_word):
    reason = scenario_of({**LLAMA_8B_ROW, **change})
    assert isinstance(reason, str) and reason_word in reason


def test_a_32bit_paged_optimizer_row_is_predicted():
    # bitsandbytes' paged 32-bit AdamW is modelled (fp32 states in unified memory), so the row is no longer refused
    scenario, _ = scenario_of({**LLAMA_8B_ROW, "optimizer": "paged AdamW (32-bit paged optimizer)"})
    assert scenario.optimizer == "paged_adamw"


def test_units_are_converted():
    cats = default_catalogs()

    def predicted(unit):
        scenario, facts = scenario_of({**LLAMA_8B_ROW, "measured_unit": unit})
        return predict_case(scenario, facts, cats)[0]

    reserved, allocated = predicted("gib_peak_reserved_per_gpu"), predicted("gib_peak_allocated_per_gpu")
    assert reserved == pytest.approx(allocated * 1.10)  # default 10 % fragmentation
    assert predicted("gb_peak_per_gpu_unspecified") == pytest.approx(allocated * 2**30 / 1e9)
    # + the modelled device overhead: 0.75 GiB CUDA context (measured on the lent H200), 2 x 32 MiB cuBLAS
    # workspaces, and one NCCL communicator (8-way data parallel) of 4 MiB x 32 channels x 2 peers = 256 MiB
    assert predicted("gib_device_used_per_gpu") == pytest.approx(reserved + 0.75 + 0.0625 + 0.25)


@pytest.mark.skipif(not CASES.exists(), reason="reference/calibration.csv is not beside this checkout")
def test_calibration_rows_summary():
    """The whole memory set of reference/calibration.csv through the user's path (validate, shipped)."""
    rows = [row for row in load_case_file(CASES) if row["category"] == "memory"]
    report = validate_cases(rows, CATS)
    stats = report["summary"]["memory"]
    assert stats["n_skipped"] <= 5
    # Measured: median 10.3 % (9.6 % before memory rows went through resolve -> evaluate: the decoder-only
    # shape of the T5 rows PEFT-1..4 lacks the decoder's cross-attention, 0.40 of T0_3B's 2.85 B parameters,
    # so PEFT-1 moved from -3 % to -17 %). Rows beyond 30 % lack a fact in the case file (torchtune's chunked
    # loss, a contradictory 4090/A6000 pair, DeepSpeed's parameter cache); see docs/accuracy.md.
    assert stats["median_abs_rel_error"] <= 0.105
