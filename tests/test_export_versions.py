"""The release each export is written for agrees everywhere it is stated: the file itself (its header comment,
DeepSpeed's `_written_for` key, or the notes of a format without comments), the README's export table, and the
pins `make test-exports` loads the files with (framework_checks/requirements*.txt)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from planner import EXPORT_TARGETS, Scenario, default_catalogs, export_plan
from planner.export.export_types import INSTALL, TARGET_VERSIONS

ROOT = Path(__file__).resolve().parent.parent
CHECKS = ROOT / "framework_checks"
# The package each target's release is, and the requirements file make test-exports installs it from.
PACKAGES = {
    "deepspeed": ("deepspeed", "requirements.txt"),
    "accelerate": ("accelerate", "requirements.txt"),
    "torchtune": ("torchtune", "requirements.txt"),
    "torchtitan": ("torchtitan", "requirements.txt"),
    "torchtitan-0.2": ("torchtitan", "requirements-torchtitan-0.2.txt"),
    "megatron": ("megatron-core", "requirements-megatron-lm.txt"),
    "trl": ("trl", "requirements.txt"),
}
# A plan every target writes (Llama 3.1 8B: torchtitan has it; SFT: torchtune and TRL write it).
PLAN = Scenario(model="Llama 3.1 8B", n_gpus=8, zero_stage=3, micro_batch=2, grad_accum=4)


def _pins(file_name: str) -> dict[str, str]:
    lines = (CHECKS / file_name).read_text(encoding="utf-8").splitlines()
    found = (line.split("==") for line in lines if "==" in line and not line.startswith("#"))
    return {name.strip().lower(): version.strip() for name, version in found}


def _readme_rows() -> dict[str, list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    head = "| target | file | version | install | refuses, and why |"
    assert head in text, "the README's export table is missing or its columns changed"
    rows: dict[str, list[str]] = {}
    for line in text[text.index(head) :].splitlines()[2:]:
        if not line.startswith("| `"):
            break
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        rows[cells[0].strip("`")] = cells
    return rows


def _version(target: str) -> str:
    return re.sub(r"^.*?v", "", TARGET_VERSIONS[target])  # "DeepSpeed v0.19.8" / "Megatron-LM core_v0.19.2"


def test_every_target_has_a_release_an_install_line_and_a_pin():
    assert set(TARGET_VERSIONS) == set(INSTALL) == set(PACKAGES) == set(EXPORT_TARGETS)


@pytest.mark.parametrize("target", EXPORT_TARGETS)
def test_stated_release_is_the_pinned_one(target):
    package, file_name = PACKAGES[target]
    pins = _pins(file_name)
    assert _version(target) == pins[package]
    # every package==version the install line names is the one make test-exports installs
    for name, version in re.findall(r"([A-Za-z0-9_.-]+)==([0-9][^\s,)]*)", INSTALL[target]):
        assert pins.get(name.lower(), _pins("requirements.txt").get(name.lower())) == version, name


@pytest.mark.parametrize("target", EXPORT_TARGETS)
def test_readme_table_names_the_release_and_install_line(target):
    row = _readme_rows()[target]
    assert row[2] == TARGET_VERSIONS[target]
    assert row[3] == f"`{INSTALL[target]}`"
    assert row[4], f"say what {target} refuses, or '—'"


def test_readme_table_lists_every_target_once():
    assert list(_readme_rows()) == list(EXPORT_TARGETS)


@pytest.mark.parametrize("target", EXPORT_TARGETS)
def test_each_file_states_its_release_and_install_line(target):
    found = export_plan(PLAN, default_catalogs(), target)
    stated = f"{TARGET_VERSIONS[target]}"
    if target == "deepspeed":  # JSON has no comments: a key of its own, which DeepSpeedConfig ignores
        where = json.loads(found.text)["_written_for"]
    elif found.file_name.endswith(".txt"):  # words spliced into a command line: no comment can ride along
        where = " ".join(found.notes)
    else:
        where = "\n".join(line for line in found.text.splitlines() if line.startswith("#"))
    assert stated in where and INSTALL[target] in where
