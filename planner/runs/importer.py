"""`planner runs import FILE...`: each file to a RunRecord, config files joined to the run they describe.

A model config.json or training_args.json given with a trainer_state.json fills that run's configuration; on
its own (no trainer state in the same call) it is refused, since there is nothing measured to attach it to.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from planner.runs.column_map import parse_column_map, read_mapped_csv
from planner.runs.hf_trainer import (
    MAX_JSON_BYTES,
    add_config,
    is_config,
    is_trainer_state,
    read_trainer_state,
)
from planner.runs.reading import Progress, read_json, read_log
from planner.runs.record import RunLogError, RunRecord


def import_runs(
    paths: Sequence[Path],
    columns: str | dict[str, tuple[str, float]] | None = None,
    progress: Progress | None = None,
) -> list[RunRecord]:
    """Each file to a RunRecord; `columns` is the CSV column map (`FIGURE=COLUMN[*SCALE],...` or parsed)."""
    if isinstance(columns, str):
        columns = parse_column_map(columns)
    records: list[RunRecord] = []
    configs: list[tuple[Path, dict[str, object]]] = []
    for path in paths:
        if not path.is_file():
            raise RunLogError(f"{path}: no such file")
        if path.suffix.lower() == ".json" or _starts_with_brace(path):
            data = read_json(path, MAX_JSON_BYTES)
            if is_trainer_state(data):
                records.append(read_trainer_state(path, data))
            elif is_config(data):
                configs.append((path, data))
            else:
                keys = ", ".join(list(data)[:8])
                raise RunLogError(
                    f"{path.name}: JSON that is neither a trainer_state.json (log_history, global_step) nor a "
                    f"model config / training arguments; its keys: {keys}"
                )
        elif path.suffix.lower() == ".csv":
            records.append(read_mapped_csv(path, columns or {}, progress))
        else:
            records.append(read_log(path, progress))
    _join_configs(records, configs)
    return records


def _join_configs(records: list[RunRecord], configs: list[tuple[Path, dict[str, object]]]) -> None:
    if not configs:
        return
    states = [record for record in records if record.log_format == "hf_trainer_state"]
    if len(states) != 1:
        names = ", ".join(path.name for path, _ in configs)
        raise RunLogError(
            f"{names}: a config is joined to exactly one trainer_state.json in the same import; got {len(states)}"
        )
    for path, data in configs:
        add_config(states[0], path, data)


def _starts_with_brace(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(64).lstrip().startswith(b"{")
