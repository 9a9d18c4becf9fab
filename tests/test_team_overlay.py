"""A team folder (PLANNER_DATA_DIR) and a session's uploads go through one overlay with one collision rule,
and the CLI reads the team folder exactly as the app does.

The rule (planner/catalogue/catalog_overlay.py, data/README.md "A team's own data"): a row replaces the GPU
below that its name names (as a name or an alias) and keeps that GPU's names as aliases; an alias naming any
other GPU, or two rows naming one GPU, is rejected with file, row and column. Nothing is dropped silently.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from planner.catalogue.catalog import (
    DATA_DIR,
    DATA_DIR_ENV,
    UPLOAD,
    CatalogError,
    LayerFile,
    catalogs_from_environment,
    default_catalogs,
    load_catalogs,
    overlay,
)
from planner.inputs.scenario import Scenario

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = default_catalogs()


def _gpu_csv(*rows: dict[str, str]) -> str:
    header = next(csv.reader(io.StringIO((DATA_DIR / "gpus.csv").read_text(encoding="utf-8"))))
    base = next(csv.DictReader(io.StringIO((DATA_DIR / "gpus.csv").read_text(encoding="utf-8"))))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, header, lineterminator="\n")
    writer.writeheader()
    writer.writerows({**base, "source": "our lab", **row} for row in rows)
    return buffer.getvalue()


def _team(tmp_path: Path, *rows: dict[str, str]) -> Path:
    team = tmp_path / "team"
    team.mkdir(exist_ok=True)
    (team / "gpus.csv").write_text(_gpu_csv(*rows), encoding="utf-8")
    return team


def test_a_row_named_by_a_bundled_alias_replaces_that_gpu_and_keeps_its_names(tmp_path: Path) -> None:
    cats = load_catalogs(overlay_dir=_team(tmp_path, {"name": "H100", "aliases": "", "memory_gib": "75"}))
    assert cats.gpus.height == BUNDLED.gpus.height  # replaced, not added beside it
    for spelling in ("H100", "H100 SXM", "h100-sxm5", "h100 80gb"):
        row = cats.gpu(spelling)
        assert (row["name"], row["memory_gib"], row["origin"]) == ("H100", 75.0, "team"), spelling
    # The bundled H100 SXM prices follow the GPU to its new name (3.93 $/h: data/prices/2026-11-09.csv).
    price = cats.price("H100")
    assert (price["usd_per_gpu_hour_median"], price["origin"]) == (3.93, "bundled")
    assert "H100 SXM" not in cats.gpu_names() and "H100" in cats.gpu_names()


def test_a_row_with_the_bundled_name_and_no_aliases_keeps_the_bundled_aliases(tmp_path: Path) -> None:
    """Before: the bundled row's aliases went with it, and "h100" became an unknown GPU without a word."""
    cats = load_catalogs(overlay_dir=_team(tmp_path, {"name": "h100 sxm", "aliases": "", "memory_gib": "75"}))
    assert cats.gpu("h100")["name"] == "h100 sxm" and cats.gpu("h100")["origin"] == "team"
    assert cats.price("h100 sxm")["usd_per_gpu_hour_median"] == 3.93


def test_an_alias_that_names_another_bundled_gpu_is_rejected(tmp_path: Path) -> None:
    team = _team(tmp_path, {"name": "MyChip 9000", "aliases": "mychip;A100"})
    with pytest.raises(CatalogError) as caught:
        load_catalogs(overlay_dir=team)
    assert (caught.value.row, caught.value.column) == (2, "aliases")
    message = str(caught.value)
    assert (
        "team/gpus.csv, row 2, column 'aliases'" in message
        and "'A100' already names A100 80GB SXM (bundled)" in message
    )


def test_an_alias_that_names_a_second_gpu_of_a_replacing_row_is_rejected(tmp_path: Path) -> None:
    team = _team(tmp_path, {"name": "H100 SXM", "aliases": "h100;b200"})
    with pytest.raises(CatalogError, match=r"row 2, column 'aliases': 'b200' already names B200"):
        load_catalogs(overlay_dir=team)


def test_two_rows_naming_one_bundled_gpu_are_rejected(tmp_path: Path) -> None:
    team = _team(tmp_path, {"name": "H100", "aliases": ""}, {"name": "H100 SXM5", "aliases": ""})
    with pytest.raises(CatalogError, match=r"row 3, column 'name': 'H100 SXM5' names H100 SXM, which row 2"):
        load_catalogs(overlay_dir=team)


def test_uploads_follow_the_same_rule_over_the_team_data(tmp_path: Path) -> None:
    team = load_catalogs(overlay_dir=_team(tmp_path, {"name": "TeamChip 1", "aliases": "teamchip"}))
    upload = [
        LayerFile(
            "gpus.csv",
            _gpu_csv({"name": "teamchip", "aliases": "", "memory_gib": "12"}).encode(),
            "uploaded x.csv",
        )
    ]
    merged = overlay(team, upload, UPLOAD)
    assert merged.gpu("TeamChip 1")["memory_gib"] == 12.0 and merged.gpu("teamchip")["origin"] == UPLOAD
    clash = [
        LayerFile("gpus.csv", _gpu_csv({"name": "Other", "aliases": "teamchip"}).encode(), "uploaded y.csv")
    ]
    with pytest.raises(
        CatalogError, match=r"uploaded y\.csv, row 2, column 'aliases': 'teamchip' already names"
    ):
        overlay(team, clash, UPLOAD)


def test_catalogs_from_environment_reads_the_team_folder(tmp_path: Path) -> None:
    assert catalogs_from_environment({}) is BUNDLED
    team = _team(tmp_path, {"name": "TeamChip 1", "aliases": ""})
    assert catalogs_from_environment({DATA_DIR_ENV: str(team)}).gpu("teamchip 1")["origin"] == "team"
    with pytest.raises(CatalogError, match="no such folder"):
        catalogs_from_environment({DATA_DIR_ENV: str(tmp_path / "nowhere")})


# --- the CLI, as a user runs it ----------------------------------------------------------------------------


def _cli(*args: str, folder: Path | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != DATA_DIR_ENV}
    if folder is not None:
        env[DATA_DIR_ENV] = str(folder)
    return subprocess.run(
        [sys.executable, "-m", "planner", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_compare_lists_the_team_gpu(tmp_path: Path) -> None:
    team = _team(tmp_path, {"name": "TeamChip 1", "aliases": "teamchip", "memory_gib": "96"})
    done = _cli("compare", "--format", "json", folder=team)
    assert done.returncode == 0, done.stderr
    rows = {row["gpu"]: row for row in json.loads(done.stdout)}
    assert (rows["TeamChip 1"]["origin"], rows["TeamChip 1"]["memory_gib"]) == ("team", 96.0)
    assert len(rows) == BUNDLED.gpus.height + 1
    without = json.loads(_cli("compare", "--format", "json", folder=None).stdout)
    assert "TeamChip 1" not in {row["gpu"] for row in without}
    estimate = _cli("estimate", "--gpu", "teamchip", "--format", "json", folder=team)
    assert estimate.returncode == 0, estimate.stderr


def test_cli_with_a_bad_team_folder_exits_2_with_one_line(tmp_path: Path) -> None:
    team = _team(tmp_path, {"name": "TeamChip 1", "aliases": "", "memory_gib": "lots"})
    done = _cli("compare", folder=team)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "team/gpus.csv, row 2, column 'memory_gib': must be a number" in lines[0]
    missing = _cli("estimate", folder=tmp_path / "nowhere")
    assert (
        missing.returncode == 2
        and f"{DATA_DIR_ENV}=" in missing.stderr
        and "no such folder" in missing.stderr
    )


def test_memory_fixes_are_judged_against_the_team_vram(tmp_path: Path) -> None:
    """The Memory page's fixes use the session's catalogues, not the bundled VRAM (point 3)."""
    from planner.decide.explore import suggest_fixes
    from planner.resolve import resolve

    team = load_catalogs(overlay_dir=_team(tmp_path, {"name": "H100 SXM", "memory_gib": "4000"}))
    s = Scenario(model="Llama 3.1 70B", n_gpus=1, gpu="H100 SXM")
    on_team = suggest_fixes(resolve(s, team), team)
    on_bundled = suggest_fixes(resolve(s, BUNDLED), BUNDLED)
    assert [fix.label for fix in on_team] and all(fix.fits for fix in on_team)  # 4,000 GiB holds every fix
    assert not all(fix.fits for fix in on_bundled)  # 79.65 GiB does not hold a 70B model's full training
