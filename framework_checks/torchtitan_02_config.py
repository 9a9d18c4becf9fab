"""torchtitan 0.2.2's own ConfigManager and model registry over the `torchtitan-0.2` TOML exports.

Run as a script by test_torchtitan.py with PYTHONPATH naming torchtitan 0.2.2 (requirements-torchtitan-0.2.txt),
which shadows the 0.3.0 of .venv-exports. Reads JSON `[file, ...]` on stdin and writes JSON to the file named by
its argument: per file, in order, the values the tests compare, or the error torchtitan stopped with. The flavor
is looked up in the train spec's model_args, as torchtitan.train does before it builds the model.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any


def check(path: str) -> dict[str, Any]:
    import torchtitan
    from torchtitan.config.manager import ConfigManager
    from torchtitan.protocols.train_spec import get_train_spec

    try:
        config = ConfigManager().parse_args(["--job.config_file", path])
        spec = get_train_spec(config.model.name)
        spec.model_args[config.model.flavor]  # KeyError when the module has no such flavor
    except BaseException as err:
        return {"error": f"{type(err).__name__}: {err}", "trace": traceback.format_exc()[-2000:]}
    p = config.parallelism
    return {
        "torchtitan": torchtitan.__file__,
        "tp": p.tensor_parallel_degree,
        "pp": p.pipeline_parallel_degree,
        "cp": p.context_parallel_degree,
        "dp": p.data_parallel_shard_degree * p.data_parallel_replicate_degree,
        "local_batch": config.training.local_batch_size,
    }


def main() -> None:
    out_path, paths = sys.argv[1], json.load(sys.stdin)
    results = [check(path) for path in paths]
    with open(out_path, "w", encoding="utf-8") as out:
        json.dump(results, out)


if __name__ == "__main__":
    main()
