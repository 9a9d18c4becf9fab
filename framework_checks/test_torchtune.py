"""torchtune 0.6.1 loads every torchtune export: `tune validate` (component resolution and argument binding of
every `_component_` section) on the file alone and on the file set over torchtune's own config for its recipe
and model, the way the file's first comment lines tell a user to."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from framework_checks.conftest import refused, written

CASES = written("torchtune")
RUN_LINE = re.compile(r"^# Then: tune run (?:--nproc_per_node \d+ )?(\S+) --config", re.MULTILINE)


def _recipe(text: str) -> str:
    found = RUN_LINE.search(text)
    assert found, "the file does not say which recipe runs it"
    return found.group(1)


def _base_config(recipe: str, model_component: str) -> Any | None:
    """torchtune's own config for `recipe` whose model builder comes from the same module as the file's."""
    import torchtune
    from omegaconf import OmegaConf
    from torchtune._recipe_registry import get_all_recipes

    # where `tune cp` reads them: the recipes folder installed beside the torchtune package
    configs_dir = Path(torchtune.__file__).parent.parent / "recipes" / "configs"
    module = model_component.rsplit(".", 1)[0]
    for entry in get_all_recipes():
        if entry.name != recipe:
            continue
        for config in entry.configs:
            base = OmegaConf.load(configs_dir / config.file_path)
            if str(base.get("model", {}).get("_component_", "")).rsplit(".", 1)[0] == module:
                return base
    return None


def _set_over(base: Any, mine: Any) -> Any:
    """The file's keys over the base; a section naming a _component_ replaces the base's section whole."""
    from omegaconf import OmegaConf

    merged = OmegaConf.to_container(base)
    for key, value in OmegaConf.to_container(mine).items():
        if isinstance(value, dict) and "_component_" not in value and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return OmegaConf.create(merged)


@pytest.mark.parametrize(("plan", "path", "entry"), CASES, ids=[c[0] for c in CASES])
def test_tune_validate_accepts_the_file_and_the_file_over_torchtunes_config(plan, path, entry) -> None:
    from omegaconf import OmegaConf
    from torchtune import config as tune_config
    from torchtune._recipe_registry import get_all_recipes

    text = path.read_text()
    mine = OmegaConf.load(path)
    recipe = _recipe(text)
    assert recipe in {r.name for r in get_all_recipes()}, recipe
    tune_config.validate(mine)  # what `tune validate FILE` runs
    component = mine.get("model", {}).get("_component_")
    if component is None:
        return  # a model torchtune's table lacks: the file says to set model._component_
    base = _base_config(recipe, component)
    if base is not None:
        tune_config.validate(_set_over(base, mine))
    if entry["plan"]["post_training"] == "dpo":
        assert recipe.endswith(("dpo_single_device", "dpo_distributed"))
        assert mine.loss._component_ == "torchtune.rlhf.loss.DPOLoss"


def test_the_tune_command_validates_a_file(tmp_path) -> None:
    """The CLI itself, once: `tune validate` exits 0 on an export."""
    _, path, _ = CASES[0]
    tune = Path(sys.executable).with_name("tune")
    done = subprocess.run([str(tune), "validate", str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "Config is well-formed" in done.stdout, done.stdout + done.stderr


def test_post_training_torchtune_cannot_run_is_refused_with_the_reason() -> None:
    reasons = refused("torchtune")
    assert "grpo_full_8b_8gpu" in reasons and "trl" in reasons["grpo_full_8b_8gpu"]
    assert "ppo_full_8b_8gpu" in reasons and "ppo_full_finetune_single_device" in reasons["ppo_full_8b_8gpu"]


def test_the_ppo_recipe_the_refusal_names_is_torchtunes() -> None:
    from torchtune._recipe_registry import get_all_recipes

    assert "ppo_full_finetune_single_device" in {entry.name for entry in get_all_recipes()}
