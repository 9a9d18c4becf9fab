"""DeepSpeed 0.19.8 loads every DeepSpeed export: `DeepSpeedConfig` with the plan's data-parallel size, then
`deepspeed.initialize` and one optimizer step of a tiny model on CPU with the file's ZeRO, optimizer and
precision settings."""

from __future__ import annotations

import json
import os

import pytest

from framework_checks.conftest import refused, written

os.environ.setdefault("DS_ACCELERATOR", "cpu")  # DeepSpeed's CPU accelerator: no GPU on the test machines

CASES = written("deepspeed")


@pytest.fixture(scope="module")
def deepspeed_comm(one_process_group) -> None:
    """deepspeed.comm over the one-rank gloo group (DeepSpeedConfig asks it for the rank)."""
    import deepspeed

    deepspeed.init_distributed(dist_backend="gloo")


class DataParallelOnly:
    """The part of Megatron's `mpu` DeepSpeedConfig reads: the plan's data-parallel size (the process group
    here has one rank, the plan has many)."""

    def __init__(self, dp: int) -> None:
        self.dp = dp

    def get_data_parallel_world_size(self) -> int:
        return self.dp


@pytest.mark.parametrize(("plan", "path", "entry"), CASES, ids=[c[0] for c in CASES])
def test_deepspeed_config_accepts_the_file(plan, path, entry, deepspeed_comm) -> None:
    from deepspeed.runtime.config import DeepSpeedConfig

    config = json.loads(path.read_text())
    parsed = DeepSpeedConfig(config, mpu=DataParallelOnly(entry["dp"]))
    assert parsed.train_batch_size == config["train_batch_size"]
    assert parsed.zero_optimization_stage == config["zero_optimization"]["stage"]


@pytest.mark.parametrize(("plan", "path", "entry"), CASES, ids=[c[0] for c in CASES])
def test_deepspeed_initialize_and_one_step_on_cpu(plan, path, entry, deepspeed_comm) -> None:
    """The file as it is, except what a CPU run needs: one CPU rank stands for the plan's dp ranks, so the global
    batch is micro-batch x accumulation (DeepSpeed checks global = micro x accumulation x ranks); torch's own
    Adam/AdamW instead of DeepSpeed's fused kernels (`torch_adam`, `zero_force_ds_cpu_optimizer: false`), which
    would be JIT-compiled for 10+ minutes on a 2-core machine; no fp16 (the CPU accelerator trains bf16 and fp32)."""
    import deepspeed
    import torch

    config = json.loads(path.read_text())
    config["train_batch_size"] = (
        config["train_micro_batch_size_per_gpu"] * config["gradient_accumulation_steps"]
    )
    config["fp16"] = {"enabled": False}
    if config.get("optimizer", {}).get("type") in ("Adam", "AdamW"):
        config["optimizer"]["params"]["torch_adam"] = True
    config["zero_force_ds_cpu_optimizer"] = False
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    optimizer = None
    if "optimizer" not in config:  # the 8-bit AdamW plans: the client's optimizer, as the file's note says
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    engine, *_ = deepspeed.initialize(
        model=model, model_parameters=model.parameters(), optimizer=optimizer, config=config
    )
    dtype = torch.bfloat16 if config.get("bf16", {}).get("enabled") else torch.float32
    for _ in range(config["gradient_accumulation_steps"]):
        x = torch.randn(config["train_micro_batch_size_per_gpu"], 16, dtype=dtype)
        loss = engine(x).float().pow(2).mean()
        engine.backward(loss)
        engine.step()
    assert engine.global_steps == 1 and torch.isfinite(loss).item()


def test_refusals_say_why() -> None:
    for plan, reason in refused("deepspeed").items():
        assert len(reason.split()) >= 6, (plan, reason)
