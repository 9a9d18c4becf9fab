"""Reading one log file: recognise its trainer, stream its lines in bounded memory, report found and missing.

Only one line (at most `MAX_LINE_CHARS` characters of it) is held at a time, so a 100 MB or 10 GB console log
costs the same memory (tests/test_runs_import.py measures the peak RSS on a generated 100 MB file). `progress`
is called with the share of bytes read, for the app's progress bar.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from planner.runs.formats import ANSI, LINE_FORMATS, LineFormat
from planner.runs.record import RunLogError, RunRecord
from planner.runs.summary import Summary

# A longer "line" (a binary file, a minified blob) is read in pieces of this size; no log line we parse is
# near it. 64 KiB keeps the worst case to one such piece in memory.
MAX_LINE_CHARS = 65_536
# Lines looked at to recognise the trainer: every trainer here prints its first metrics line within its first
# few thousand lines of start-up output (config dumps, model summaries).
SNIFF_LINES = 20_000
PROGRESS_EVERY_LINES = 50_000
Progress = Callable[[float], None]


def read_log(path: Path, progress: Progress | None = None) -> RunRecord:
    """Read a console or metric log (torchtitan, Megatron-LM, DeepSpeed, torchtune) into a RunRecord."""
    size = max(path.stat().st_size, 1)
    with path.open("rb") as handle:  # bytes, so that tell() gives the share read; each line decoded alone
        fmt = _recognise(handle, path)
        handle.seek(0)
        summary = Summary()
        record = RunRecord(path=path.name, log_format=fmt.name)
        for record.n_lines, line in enumerate(_lines(handle), start=1):
            fmt.parse(line, summary)
            if progress is not None and record.n_lines % PROGRESS_EVERY_LINES == 0:
                progress(min(handle.tell() / size, 1.0))
    if summary.empty():
        raise RunLogError(f"{path.name}: looks like a {fmt.name} log but holds no complete metrics line")
    summary.fill(record)
    if progress is not None:
        progress(1.0)
    return record


def _lines(handle: IO[bytes]) -> Iterator[str]:
    while line := handle.readline(MAX_LINE_CHARS):
        yield line.decode("utf-8", errors="replace")


def _recognise(handle: IO[bytes], path: Path) -> LineFormat:
    for n_seen, line in enumerate(_lines(handle), start=1):
        plain = ANSI.sub("", line)
        for fmt in LINE_FORMATS:
            if any(pattern.search(plain) for pattern in fmt.signatures):
                return fmt
        if n_seen >= SNIFF_LINES:
            break
    names = ", ".join(fmt.name for fmt in LINE_FORMATS)
    raise RunLogError(
        f"{path.name}: not a training log we can read (looked for the metrics lines of {names}, "
        "Hugging Face trainer_state.json, or a CSV with --columns); found none in its first "
        f"{SNIFF_LINES:,} lines"
    )


def read_json(path: Path, max_bytes: int) -> dict[str, object]:
    """A small JSON file (trainer state, model config, training arguments), refused when torn or too big."""
    if path.stat().st_size > max_bytes:
        raise RunLogError(f"{path.name}: {path.stat().st_size:,} bytes, more than the {max_bytes:,} allowed")
    try:
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except json.JSONDecodeError as err:
        raise RunLogError(f"{path.name}: torn or not JSON ({err.msg} at line {err.lineno})") from None
    if not isinstance(data, dict):
        raise RunLogError(f"{path.name}: a JSON {type(data).__name__}, expected an object")
    return data
