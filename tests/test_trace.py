"""`planner trace`: the storage tracker, the traced step's model-state arithmetic, and the refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from planner.catalogue.catalog import default_catalogs
from planner.cli.main import main
from planner.inputs.scenario import Scenario
from planner.model.shape import ModelShape
from tests.trace_extra import require_trace_extra

ROOT = Path(__file__).resolve().parents[1]
GIB = 2**30
# A toy Llama whose parameters are counted by hand: embedding 512 x 128 = 65,536; per layer q 128x128 = 16,384,
# k and v 128x64 = 8,192 each, o 16,384, gate/up/down 3 x 128 x 384 = 147,456, two norms 256 -> 196,864, two
# layers 393,728; final norm 128; untied head 65,536. N = 524,928.
TOY = ModelShape(name="toy", family="llama", vocab_size=512, hidden_size=128, n_layers=2, n_heads=4, n_kv_heads=2,
                 head_dim=32, ffn_hidden=384, context_len=4096)  # fmt: skip
TOY_PARAMS = 524_928
TOY_TENSORS = 1 + 2 * 9 + 1 + 1  # embedding, 9 per layer, final norm, head


@pytest.fixture(autouse=True)
def _extra() -> None:
    require_trace_extra()


def toy(**fields) -> Scenario:
    return Scenario(model="", model_shape=TOY, n_gpus=1, seq_len=128, **fields)


def test_tracker_counts_each_storage_once_rounded_to_the_allocator_block():
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from planner.trace.tracker import StorageTracker

    tracker = StorageTracker()
    with FakeTensorMode(), tracker:
        tracker.start_phase("forward")
        a = torch.empty(1000, dtype=torch.float32)  # 4,000 B -> 4,096 (8 blocks of 512)
        view = a[:10]  # same storage: not counted again
        b = a * 2  # a second 4,096
        assert tracker.live_bytes == 8192
        del b, view
        assert tracker.live_bytes == 4096
        c = torch.empty(10, dtype=torch.bfloat16)  # 20 B -> one 512-byte block
        assert tracker.live_bytes == 4096 + 512
        del a, c
    assert tracker.live_bytes == 0
    assert tracker.phase_peak_bytes["forward"] == 8192


def test_full_training_optimizer_phase_is_the_mixed_precision_arithmetic():
    """bf16 weights 2 + bf16 gradients 2 + fp32 master 4 + AdamW 8 + the fp32 gradient copy the master update
    reads 4 = 20 B per parameter (ZeRO paper §3.1's 16 plus the copy); fused AdamW keeps one fp32 step counter
    per tensor, and every tensor is rounded up to 512 B: at most 3 blocks per tensor on top."""
    from planner.trace.traced import trace_plan

    report = trace_plan(toy(method="full"), default_catalogs())
    traced = report.traced_phase_peak_gib["optimizer"] * GIB
    assert 20 * TOY_PARAMS <= traced <= 20 * TOY_PARAMS + 3 * 512 * TOY_TENSORS
    assert report.traced_peak_phase == "optimizer"
    # the formulas charge the same states and temporary: they agree to the allocator's rounding
    assert report.formula_vs_trace_frac == pytest.approx(0.0, abs=0.01)


def test_recompute_lowers_the_forward_peak_and_accumulation_keeps_gradients():
    from planner.trace.traced import trace_plan

    cats = default_catalogs()
    plain = trace_plan(toy(method="full", optimizer="sgd"), cats).traced_phase_peak_gib
    rebuilt = trace_plan(toy(method="full", optimizer="sgd", recompute="full"), cats).traced_phase_peak_gib
    accumulated = trace_plan(toy(method="full", optimizer="sgd", grad_accum=4), cats).traced_phase_peak_gib
    assert rebuilt["forward"] < 0.8 * plain["forward"]
    # the second micro-batch's forward runs beside the first one's bf16 gradients (2 B per parameter)
    gained = (accumulated["forward"] - plain["forward"]) * GIB
    assert 2 * TOY_PARAMS <= gained <= 2 * TOY_PARAMS + 512 * TOY_TENSORS


def test_fsdp_shards_the_states_over_the_fake_ranks():
    """rank 0 of n under FSDP2 holds 1/n of the bf16 weights (2 B) and the fp32 master copy (4 B): from 2 to 4
    GPUs the forward peak falls by 6 N (1/2 - 1/4), from 4 to 8 by 6 N (1/4 - 1/8) (SGD: no other state)."""
    from planner.trace.traced import trace_plan

    cats = default_catalogs()
    forward = {
        n: trace_plan(toy(method="full", optimizer="sgd").updated(n_gpus=n), cats).traced_phase_peak_gib[
            "forward"
        ]
        for n in (2, 4, 8)
    }
    assert (forward[2] - forward[4]) * GIB == pytest.approx(6 * TOY_PARAMS / 4, rel=0.02)
    assert (forward[4] - forward[8]) * GIB == pytest.approx(6 * TOY_PARAMS / 8, rel=0.02)
    report = trace_plan(toy(method="full").updated(n_gpus=4), cats)
    assert any("FSDP2" in note and "formulas" in note for note in report.notes)


def test_the_cli_traces_llama_8b_lora_on_one_gpu():
    """The acceptance command. Its optimizer phase is arithmetic: 8,030,261,248 bf16 base weights (2 B) plus
    41,943,040 fp32 LoRA parameters (rank 16 on q, k, v, o, gate, up, down of 32 layers: 16 x (8,192 + 5,120
    + 5,120 + 8,192 + 3 x 18,432) x 32) with their fp32 gradient and two AdamW states (16 B):
    16,060,522,496 + 671,088,640 = 16,731,611,136 B = 15.583 GiB."""
    command = ["trace", "--model", "Llama 3.1 8B", "--method", "lora", "--gpu", "H100 SXM", "--devices", "1"]
    done = subprocess.run([sys.executable, "-m", "planner", *command, "--format", "json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["traced_optimizer_peak_gib"] * GIB == pytest.approx(16_731_611_136, rel=0.001)
    assert report["traced_peak_phase"] in ("forward", "backward")
    assert report["traced_allocated_peak_gib"] > report["traced_optimizer_peak_gib"] + 5  # activations: GiBs
    assert report["traced_reserved_peak_gib"] == pytest.approx(report["traced_allocated_peak_gib"] * 1.1)
    # + the modelled overhead of one GPU: 0.75 GiB CUDA context + 2 x 32 MiB cuBLAS workspaces, no communicator
    assert report["traced_device_total_gib"] == pytest.approx(report["traced_reserved_peak_gib"] + 0.8125)
    assert "weights" in report["by_module_gib"]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--method", "qlora", "--devices", "1"], "--method"),
        (["--model", "Mixtral 8x7B", "--devices", "1"], "--model"),
        (["--devices", "8", "--zero-stage", "2"], "--zero-stage"),
        (["--devices", "8", "--tp", "2"], "--tp"),
        (["--optimizer", "adamw_8bit", "--devices", "1"], "--optimizer"),
        (["--model", "GPT-2 small", "--devices", "1"], "--model"),
        (["--model", "Gemma 2 2B", "--devices", "1"], "--model"),
    ],
)
def test_plans_the_trace_cannot_follow_exit_2_naming_the_flag(args, named, capsys):
    assert main(["trace", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {named}") and len(err.splitlines()) == 1, err


def test_without_the_extra_the_cli_says_how_to_enable_it():
    """Python cannot find torch (a finder in front of the import system answers for it), as on a machine
    where the extra was never installed."""
    hide = (
        "import sys\n"
        "class Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('torch', 'transformers', 'peft'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Hide())\n"
        "from planner.cli.main import main\n"
        "sys.exit(main(['trace', '--devices', '1']))\n"
    )
    done = subprocess.run([sys.executable, "-c", hide], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "pip install '.[trace]'" in done.stderr and len(done.stderr.strip().splitlines()) == 1
