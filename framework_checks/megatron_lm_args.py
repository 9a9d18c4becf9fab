"""Megatron-LM's own `parse_args` + `validate_args` (megatron/training/arguments.py) over Megatron exports.

Run as a script by test_megatron.py with PYTHONPATH naming the Megatron-LM release of
framework_checks/requirements-megatron-lm.txt (the megatron-core wheel that ships megatron/training), so that
release shadows the megatron-core of .venv-exports. Reads JSON `[[file, world_size, arch_major, env], ...]` on stdin and writes
JSON to the file named by its argument: per job, in order, the parsed values the tests compare, or the error Megatron stopped with.

Each file is launched as `pretrain_gpt.py $(cat FILE) <run flags>`: the run flags are what the file leaves to the
user (the notes say so: learning rate, tokenizer, data), here the mock-data and null-tokenizer options Megatron's
own functional tests use, so the check needs no data or tokenizer files.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any

RUN_FLAGS = ["--lr", "1e-5", "--mock-data", "--tokenizer-type", "NullTokenizer", "--vocab-size", "32000"]
# The fused rope kernel is Transformer Engine's, which has no CPU build (TransformerConfig refuses rope fusion
# without it); a GPU run has it, so only this check turns the fusion off.
RUN_FLAGS += ["--no-rope-fusion"]


def python_312_names() -> None:
    """The release asks for Python 3.12, and .venv-exports is 3.11: the one 3.12 name its import of
    megatron/training needs (typing.override, megatron/training/models/hybrid.py) comes from typing_extensions,
    the backport of the same decorator."""
    import typing

    import typing_extensions

    if not hasattr(typing, "override"):
        typing.override = typing_extensions.override  # type: ignore[attr-defined]


def check(path: str, world_size: int, arch_major: int, env: dict[str, str]) -> dict[str, Any]:
    """One file through Megatron-LM's startup checks, as rank 0 of `world_size` ranks on a GPU of compute
    capability `arch_major`.x (validate_args asks the device, and this machine has none), with the environment
    the planner's notes tell the user to set (`env`; the variable is unset otherwise)."""
    from megatron.training import arguments
    from megatron.training.arguments import core_transformer_config_from_args, parse_args, validate_args

    arguments.get_device_arch_version = lambda: arch_major
    text = Path(path).read_text(encoding="utf-8")
    words = [word for line in text.splitlines() for word in shlex.split(line)]
    os.environ.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)
    os.environ.update(WORLD_SIZE=str(world_size), RANK="0", LOCAL_RANK="0", **env)
    sys.argv = ["pretrain_gpt.py", *words, *RUN_FLAGS]
    try:
        with warnings.catch_warnings():  # megatron-core only warns, in words that say it must be used
            warnings.filterwarnings("error", message=".*sequence parallelism must be used.*")
            args = parse_args()
            validate_args(args, {})
            config = core_transformer_config_from_args(args)
    except BaseException as err:  # argparse exits with SystemExit; validate_args asserts
        return {"error": f"{type(err).__name__}: {err}", "trace": traceback.format_exc()[-2000:]}
    return {
        "tp": args.tensor_model_parallel_size,
        "pp": args.pipeline_model_parallel_size,
        "cp": args.context_parallel_size,
        "dp": args.data_parallel_size,
        "micro_batch": args.micro_batch_size,
        "global_batch": args.global_batch_size,
        "rotary_base": args.rotary_base,
        "norm_epsilon": config.layernorm_epsilon,
        "sequence_parallel": config.sequence_parallel,
        "num_layers": config.num_layers,
    }


def main() -> None:
    out_path, jobs = sys.argv[1], json.load(sys.stdin)  # check() replaces sys.argv
    python_312_names()
    results = [check(*job) for job in jobs]
    with open(out_path, "w", encoding="utf-8") as out:  # stdout carries Megatron's own prints
        json.dump(results, out)


if __name__ == "__main__":
    main()
