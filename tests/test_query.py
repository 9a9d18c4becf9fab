"""Share links: a scenario survives the round trip through the URL; bad parameters are dropped with a notice."""

from __future__ import annotations

import pytest

from planner.catalogue.catalog import default_catalogs
from planner.inputs.query import drop_unknown_names, scenario_from_query, scenario_to_query
from planner.inputs.scenario import Scenario
from planner.model.shape import ModelShape


def test_round_trip_keeps_every_changed_field_including_an_imported_shape():
    shape = ModelShape(
        name="tiny & odd",
        vocab_size=1000,
        hidden_size=64,
        n_layers=2,
        n_heads=4,
        n_kv_heads=2,
        head_dim=16,
        ffn_hidden=256,
    )
    scenario = Scenario(
        model="", model_shape=shape, mfu=0.42, zero_stage=2, packing=False, snapshot="2025-09-30"
    )
    restored, notices = scenario_from_query(scenario_to_query(scenario))
    assert restored == scenario and notices == []


def test_defaults_leave_the_link_empty():
    assert scenario_to_query(Scenario()) == {}


@pytest.mark.parametrize(
    ("key", "value"), [("mfu", "7"), ("mfu", "nan"), ("n_gpus", "-3"), ("optimizer", "adam")]
)
def test_invalid_values_are_dropped_and_named(key, value):
    restored, notices = scenario_from_query({key: value, "epochs": "2"})
    assert getattr(restored, key) == Scenario.model_fields[key].default
    assert restored.epochs == 2
    assert any(f"'{key}'" in notice for notice in notices)


def test_unknown_keys_and_repeated_keys():
    restored, notices = scenario_from_query({"nonsense": "1", "epochs": ["1", "4"]})
    assert restored.epochs == 4  # the last of repeated values wins
    assert notices == ["Ignored unknown link parameter 'nonsense'."]


def test_unknown_catalogue_names_fall_back_to_the_default_with_closest_matches():
    scenario, _ = scenario_from_query({"gpu": "H10O"})
    kept, notices = drop_unknown_names(scenario, {"gpu": default_catalogs().gpu})
    assert kept.gpu == Scenario.model_fields["gpu"].default
    assert len(notices) == 1 and "H100" in notices[0]


def test_a_link_parameter_with_several_problems_is_dropped_with_one_notice_each():
    from planner.inputs.query import scenario_from_query

    scenario, notices = scenario_from_query({"model_shape": "{}", "n_gpus": "16"})
    assert scenario.model_shape is None and scenario.n_gpus == 16
    assert len(notices) == 1 and notices[0].startswith("Ignored link parameter 'model_shape': vocab_size: ")
