"""The planner error carries its parts (field, value given, allowed range, closest names), never only text."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from planner.catalogue.catalog import default_catalogs
from planner.catalogue.models import find_model
from planner.errors import PlannerError
from planner.inputs.errors import scenario_error
from planner.inputs.scenario import Scenario
from planner.model.hf_config import ConfigImportError, shape_from_hf_config

CATS = default_catalogs()


def rejected(**fields) -> PlannerError:
    with pytest.raises(ValidationError) as caught:
        Scenario.model_validate(fields)
    return scenario_error(caught.value)


def test_a_range_error_carries_field_value_and_range():
    error = rejected(n_gpus="0")
    assert (error.field, error.value, error.allowed) == ("n_gpus", "0", ">= 1 and <= 1e+06")
    assert error.describe("--devices").startswith("--devices: Input should be greater than or equal to 1")


def test_choices_and_booleans_are_listed_as_allowed():
    assert rejected(method="dora").allowed == "full, lora, qlora"
    assert rejected(packing="perhaps").allowed == "true or false"


def test_every_problem_of_an_input_is_kept():
    error = rejected(n_gpus=0, mfu=7, method="dora")
    assert [error.field, *(more.field for more in error.more)] == ["n_gpus", "mfu", "method"]


def test_a_cross_field_rule_says_which_fields_it_involves():
    error = rejected(n_gpus=6, tp=4)
    assert error.fields == ("n_gpus", "tp", "pp", "cp")
    assert (error.value, error.problem) == (6, "must be a multiple of tp x pp x cp = 4")


def test_an_unknown_input_gets_the_closest_names():
    error = rejected(n_gpu=8)
    assert error.field == "n_gpu" and error.closest[0] == "n_gpus"


def test_a_nested_shape_problem_keeps_its_path():
    shape = find_model(CATS.models, "Llama 3.1 8B").model_dump() | {"n_kv_heads": 5}
    error = rejected(model="", model_shape=shape)
    assert (error.field, error.path, error.value) == ("model_shape", ("n_heads",), 32)


def test_catalogue_names_carry_field_value_and_closest():
    with pytest.raises(PlannerError) as caught:
        CATS.gpu("H10")
    assert (caught.value.field, caught.value.value) == ("gpu", "H10")
    assert "H100 SXM" in caught.value.closest
    with pytest.raises(PlannerError) as caught:
        find_model(CATS.models, "Llama 3.1 8")
    assert caught.value.field == "model" and caught.value.closest[0] == "Llama 3.1 8B"


def test_a_config_import_error_is_a_planner_error_about_the_shape():
    with pytest.raises(ConfigImportError) as caught:
        shape_from_hf_config('{"model_type": "bert"}')
    assert isinstance(caught.value, PlannerError) and caught.value.field == "model_shape"
    assert caught.value.describe("config.json").startswith("config.json: config")
