"""Hugging Face Trainer output: trainer_state.json, with the model's config.json and training_args.json.

Keys follow transformers at huggingface/transformers@55093b758b338fdc7903e778509523d755ae080d:
src/transformers/trainer_callback.py (TrainerState: `log_history`, `global_step`, `total_flos`,
`train_batch_size`) and src/transformers/trainer.py, whose final log entry carries `train_runtime` (s),
`train_samples_per_second` and `train_steps_per_second` (from `speed_metrics`, over the whole run, all
processes). training_args.json is `TrainingArguments.to_json_string()`; training_args.bin is a pickle and is
never opened (unpickling runs code).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from planner.runs.record import RunLogError, RunRecord

# trainer_state.json is read whole (JSON has no line structure to stream): one logged step is ~200 bytes, so
# 64 MiB holds some 300,000 logged steps; a bigger file is refused rather than loaded.
MAX_JSON_BYTES = 64 * 2**20
# config.json key -> case-file column (LlamaConfig and its kin name them so; GPT-2 style names second).
# max_position_embeddings is the model's longest context, not the run's sequence length: never read as seq_len.
CONFIG_COLUMNS = {
    "hidden_size": "hidden", "n_embd": "hidden", "num_hidden_layers": "n_layers", "n_layer": "n_layers",
    "num_attention_heads": "n_heads", "n_head": "n_heads", "num_key_value_heads": "n_kv_heads",
    "intermediate_size": "ffn_hidden", "vocab_size": "vocab",
}  # fmt: skip
ARGS_COLUMNS = {
    "per_device_train_batch_size": "micro_batch", "gradient_accumulation_steps": "grad_accum",
    "optim": "optimizer",
}  # fmt: skip


def is_trainer_state(data: dict[str, Any]) -> bool:
    return "log_history" in data and "global_step" in data


def read_trainer_state(path: Path, data: dict[str, Any]) -> RunRecord:
    record = RunRecord(path=path.name, log_format="hf_trainer_state")
    history = data.get("log_history")
    if not isinstance(history, list):
        raise RunLogError(f"{path.name}: log_history is not a list")
    final = next((e for e in reversed(history) if isinstance(e, dict) and "train_runtime" in e), None)
    record.n_lines = len(history)
    record.figures["n_steps"] = float(data["global_step"])
    if final is None:
        record.notes.append("no final entry with train_runtime: the run did not finish or was cut")
        return record
    record.figures["wall_clock_s"] = float(final["train_runtime"])
    if final.get("train_samples_per_second"):
        record.figures["samples_per_s_total"] = float(final["train_samples_per_second"])
    if final.get("train_steps_per_second"):
        record.figures["step_time_s"] = 1.0 / float(final["train_steps_per_second"])
    record.notes.append("rates are over the whole run, start-up included (Trainer's speed_metrics)")
    return record


def add_config(record: RunRecord, path: Path, data: dict[str, Any]) -> None:
    """Fill the record's configuration from a model config.json or a training_args.json beside it."""
    for key, column in {**CONFIG_COLUMNS, **ARGS_COLUMNS}.items():
        if key in data and data[key] is not None and column not in record.config:
            record.config[column] = str(data[key])
    if data.get("bf16"):
        record.config["precision"] = "bf16"
    elif data.get("fp16"):
        record.config["precision"] = "fp16"
    if "gradient_checkpointing" in data:
        record.config["activation_ckpt"] = "full" if data["gradient_checkpointing"] else "none"
    record.notes.append(f"configuration from {path.name}")


def is_config(data: dict[str, Any]) -> bool:
    return any(key in data for key in (*CONFIG_COLUMNS, *ARGS_COLUMNS))
