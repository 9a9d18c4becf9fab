"""Fixtures of the framework checks: the exports written by `python -m framework_checks.plans` (EXPORTS_DIR),
read here under the frameworks' own environment (.venv-exports), which has no planner installed."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest

EXPORTS_DIR = Path(os.environ.get("EXPORTS_DIR", "build/exports"))


def manifest() -> dict[str, Any]:
    path = EXPORTS_DIR / "manifest.json"
    if not path.exists():
        raise RuntimeError(f"{path} is missing: run `python -m framework_checks.plans {EXPORTS_DIR}` first")
    return json.loads(path.read_text(encoding="utf-8"))


def written(target: str) -> list[tuple[str, Path, dict[str, Any]]]:
    """(plan name, file, manifest entry) of every plan the planner exported for `target`."""
    found = []
    for name, entry in manifest().items():
        result = entry["targets"].get(target, {})
        if "file" in result:
            found.append((name, EXPORTS_DIR / result["file"], entry))
    return found


def refused(target: str) -> dict[str, str]:
    return {
        name: e["targets"][target]["refused"]
        for name, e in manifest().items()
        if "refused" in e["targets"].get(target, {})
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def one_process_group() -> None:
    """A gloo process group of one rank, as torchrun would set it up, for the frameworks that need one."""
    import torch.distributed as dist

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1")
    if not dist.is_initialized():
        dist.init_process_group("gloo", rank=0, world_size=1)
