"""The one way the planner reads a file someone else chose: a regular file only, at most a stated number of
bytes, and never more than that number plus one read from it.

Every path a user or a team controls goes through `read_limited` or `check_limited`: the CLI's scenario file
and `--model-config`, the files of a `PLANNER_DATA_DIR` team folder, and (as bytes already in memory) a
session's uploads, the Scenarios CSV import and price snapshots. Without it `--model-config /dev/zero` reads
until MemoryError and a FIFO blocks the reader forever.

Why each check:
- `os.stat` (following symlinks) before opening: a FIFO, a device, a socket or a directory is refused by its
  kind, so a symlink to /dev/zero is refused too.
- `O_NONBLOCK` on open: if the path is swapped for a FIFO between the stat and the open, opening still returns
  at once instead of waiting for a writer; `fstat` on the open descriptor then refuses it.
- reading at most `limit + 1` bytes: a file that grows, or lies about its size (/proc), cannot make the read
  longer than the limit; the extra byte is how "too large" is told from "exactly at the limit".

The limits themselves are `Limit` values with their reason, defined where the format is (catalog_schema for
catalogue files, ...) or here: scenario files, and model configs (their byte count is hf_json's, a layer below).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from planner.model.hf_json import MAX_CONFIG_BYTES

__all__ = [
    "MAX_QUERY_STRING_CHARS",
    "MODEL_CONFIG",
    "SCENARIO_FILE",
    "Limit",
    "ReadLimitError",
    "check_limited",
    "read_limited",
]

_CHUNK_BYTES = 1 << 20  # read in 1 MiB pieces so a large limit never asks the OS for one huge buffer


@dataclass(frozen=True)
class Limit:
    """At most `max_bytes` bytes for one kind of file (`what`, as messages name it), for a stated `reason`."""

    what: str
    max_bytes: int
    reason: str

    def words(self) -> str:
        return f"at most {self.max_bytes:,} bytes ({self.reason})"


# A scenario file is one Scenario as JSON: about 1 kB, 3 kB with an imported model shape.
SCENARIO_FILE = Limit("scenario file", 1_000_000, "a scenario is about 1 kB, 3 kB with a model shape")
MODEL_CONFIG = Limit("model config", MAX_CONFIG_BYTES, "a config.json is a few kB")
# A share link of every non-default field with a model shape is about 2,500 characters; browsers and proxies cut
# URLs somewhere above 8,000, so a longer query string was not made by the app's share button.
MAX_QUERY_STRING_CHARS = 8_000


class ReadLimitError(ValueError):
    """A file that is not read: not a regular file, unreadable, or over its limit. One line naming it."""

    def __init__(self, label: str, problem: str) -> None:
        self.label, self.problem = label, problem
        super().__init__(f"{label}: {problem}")


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
    )
    return next((words for test, words in kinds if test(mode)), "not a regular file")


def _refuse_kind(label: str, mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise ReadLimitError(label, f"is {_kind(mode)}, not a regular file; give a regular file")


def _too_large(label: str, limit: Limit, found: str) -> ReadLimitError:
    return ReadLimitError(label, f"is {found}; a {limit.what} may have {limit.words()}")


def read_limited(path: Path | str, limit: Limit, label: str | None = None) -> bytes:
    """The bytes of the regular file at `path`, refused (ReadLimitError) when it is anything else or too large."""
    name = str(path) if label is None else label
    try:
        _refuse_kind(name, os.stat(path).st_mode)
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as err:
        raise ReadLimitError(name, f"cannot be read ({err.strerror or err})") from None
    with os.fdopen(descriptor, "rb", buffering=0) as handle:
        info = os.fstat(descriptor)
        _refuse_kind(name, info.st_mode)  # the path may have been replaced since the stat above
        if info.st_size > limit.max_bytes:
            raise _too_large(name, limit, f"{info.st_size:,} bytes")
        return _read_at_most(handle, limit, name)


def _read_at_most(handle: object, limit: Limit, name: str) -> bytes:
    pieces: list[bytes] = []
    remaining = limit.max_bytes + 1
    while remaining > 0:
        try:
            piece = handle.read(min(remaining, _CHUNK_BYTES))  # type: ignore[attr-defined]
        except OSError as err:
            raise ReadLimitError(name, f"cannot be read ({err.strerror or err})") from None
        if not piece:
            break
        pieces.append(piece)
        remaining -= len(piece)
    data = b"".join(pieces)
    if len(data) > limit.max_bytes:
        raise _too_large(name, limit, f"larger than {limit.max_bytes:,} bytes")
    return data


def check_limited(data: bytes, limit: Limit, label: str) -> bytes:
    """Bytes already in memory (an upload) held to the same limit as a file of that kind; returns them."""
    if len(data) > limit.max_bytes:
        raise _too_large(label, limit, f"{len(data):,} bytes")
    return data
