"""The plan as torchtitan v0.3.0 command-line arguments (torchtitan/config/manager.py, config/configs.py).

torchtitan 0.3 reads no TOML: a run names a Python config function (`--module llama3 --config llama3_8b`) and
overrides its fields as `--section.field value` (tyro), the activation-checkpoint mode as a subcommand
(`activation-checkpoint:full`). The file holds those words one option per line, for
`torchrun ... -m torchtitan.train $(cat torchtitan_args.txt)`. Sections are the TOML form's
(planner.export.to_torchtitan), renamed where 0.3 renamed them. `make test-exports` parses each file with
torchtitan's own ConfigManager.
"""

from __future__ import annotations

from typing import Any

from planner.errors import PlannerError
from planner.export import to_torchtitan
from planner.export.export_types import Export, Gaps, adapters, learning_rate, written_for
from planner.export.serialize import args_text
from planner.inputs.scenario import Scenario

TARGET = "torchtitan"
FILE_NAME = "torchtitan_args.txt"
# torchtitan v0.3.0's config functions (torchtitan/models/<module>/config_registry.py); Qwen3 8B has only an NVFP4
# variant there, so it is not listed.
CONFIGS: dict[str, tuple[str, str]] = {
    "Llama 3.1 8B": ("llama3", "llama3_8b"),
    "Llama 3.1 70B": ("llama3", "llama3_70b"),
    "Llama 3.1 405B": ("llama3", "llama3_405b"),
    "Qwen3 30B A3B": ("qwen3", "qwen3_30b_a3b"),
    "DeepSeek-V3": ("deepseek_v3", "deepseek_v3_671b"),
}
AC_SUBCOMMANDS = {"none": "none", "full": "full", "selective_op": "selective", "selective": "none"}
# 0.2 fields 0.3 dropped: said in words instead
GONE = {("parallelism", "expert_tensor_parallel_degree")}


def export(s: Scenario) -> Export:
    module, config = _config(s)
    gaps = Gaps()
    args: list[tuple[str, ...]] = [("--module", module), ("--config", config)]
    for section, fields in to_torchtitan.sections(s, gaps).items():
        if section != "activation_checkpoint":
            args += _overrides(section, fields, gaps)
    if s.tp > 1:
        flag = (
            "--parallelism.enable-sequence-parallel"
            if s.sequence_parallel
            else "--parallelism.no-enable-sequence-parallel"
        )
        args.append((flag,))
    if s.pp > 1 or s.ep > 1:
        # 0.3's config check: CUDA graphs support neither pipeline stages nor the default all-to-all expert
        # dispatcher ("Set --training.disable_cuda_graphs"), found by make test-exports.
        args.append(("--training.disable-cuda-graphs",))
    args.append(("--optimizer.param-groups.0.optimizer-kwargs.lr", f"{learning_rate(s):g}"))
    args.append((f"activation-checkpoint:{AC_SUBCOMMANDS[s.recompute]}",))  # tyro subcommands come last
    _not_in_v3(s, gaps)
    gaps.note(written_for(TARGET))
    gaps.note("The config function sets data and paths.")
    return gaps.export(TARGET, args_text(args), FILE_NAME, [list(arg) for arg in args])


def _config(s: Scenario) -> tuple[str, str]:
    preset = s.model if s.model_shape is None else ""
    if preset not in CONFIGS:
        raise PlannerError(
            "model",
            "torchtitan v0.3.0 has no config function for this model (it would train another one)",
            value=preset or "custom shape",
            allowed=", ".join(CONFIGS),
        )
    return CONFIGS[preset]


def _overrides(section: str, fields: dict[str, Any], gaps: Gaps) -> list[tuple[str, ...]]:
    args: list[tuple[str, ...]] = []
    for name, value in fields.items():
        if (section, name) in GONE:
            gaps.drop(
                f"Expert tensor parallelism {value}: torchtitan 0.3 has no such option; experts follow tp."
            )
            continue
        flag = f"--{section}.{name.replace('_', '-')}"
        if isinstance(value, bool):
            args.append((flag if value else flag.replace(f"--{section}.", f"--{section}.no-"),))
        else:
            args.append((flag, str(value)))
    return args


def _not_in_v3(s: Scenario, gaps: Gaps) -> None:
    if s.method != "full":
        gaps.drop(f"LoRA: torchtitan 0.3 trains full models; the plan's {adapters(s)} are not exported.")
    if s.optimizer != "adamw":
        gaps.drop(f"Optimizer {s.optimizer}: the config functions build AdamW; the file keeps it.")
    if s.precision == "fp8_mixed":
        gaps.drop(
            "Precision fp8: torchtitan 0.3 sets float8 through a config function's converters (e.g. *_float8)."
        )
    if s.optimizer_in_backward:
        gaps.drop("Optimizer step in backward: not an option of torchtitan 0.3.")
    if s.offload_activations:
        gaps.drop("Activation offload: torchtitan 0.3 has no activation offload option.")
