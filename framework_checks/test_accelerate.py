"""accelerate 1.15.0 loads every accelerate export the way `accelerate launch --config_file FILE` does:
its own launch-argument validation over the file, the environment its launcher hands the training processes,
then the plugins the training script's Accelerator builds from that environment (FSDP or DeepSpeed) and the
parallelism config."""

from __future__ import annotations

import os
from unittest import mock

import pytest

from framework_checks.conftest import written

CASES = written("accelerate")


@pytest.mark.parametrize(("plan", "path", "entry"), CASES, ids=[c[0] for c in CASES])
def test_accelerate_launch_reads_the_file_and_builds_its_plugins(plan, path, entry) -> None:
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils import DeepSpeedPlugin, FullyShardedDataParallelPlugin
    from accelerate.utils.launch import prepare_deepspeed_cmd_env, prepare_multi_gpu_env

    args = launch_command_parser().parse_args(["--config_file", str(path), "train.py"])
    args, defaults, mixed_from_config = _validate_launch_command(args)
    assert args.num_processes == entry["plan"]["n_gpus"]
    if args.use_deepspeed:  # as launch_command prepares it for the DeepSpeed launcher
        fields = list(defaults.deepspeed_config) + (["mixed_precision"] if mixed_from_config else [])
        args.deepspeed_fields_from_accelerate_config = ",".join(fields)
        _, env = prepare_deepspeed_cmd_env(args)
    elif args.use_fsdp or args.multi_gpu:
        env = prepare_multi_gpu_env(args)
    else:
        assert entry["plan"]["n_gpus"] == 1
        return
    with mock.patch.dict(os.environ, env):
        if args.use_fsdp:
            fsdp = FullyShardedDataParallelPlugin()
            assert fsdp.fsdp_version == 2
            assert fsdp.reshard_after_forward is (entry["plan"]["zero_stage"] == 3)
        if args.use_deepspeed:
            deepspeed = DeepSpeedPlugin()
            assert deepspeed.zero_stage == entry["plan"]["zero_stage"]
        if any(key.startswith("PARALLELISM_CONFIG") for key in env):
            from accelerate.parallelism_config import ParallelismConfig

            layout = ParallelismConfig()
            assert layout.total_size == entry["plan"]["n_gpus"] // entry["plan"]["pp"] * entry["plan"]["pp"]
            assert layout.tp_size == entry["plan"]["tp"]
