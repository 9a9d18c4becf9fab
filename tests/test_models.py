"""The presets catalogue: schema, validation errors that name file, row and column, lookups."""

from __future__ import annotations

import polars as pl
import pytest

from planner.catalogue.models import (
    MODEL_SCHEMA,
    MODELS_CSV,
    ModelCatalogError,
    UnknownModelError,
    find_model,
    load_model_presets,
    preset_names,
    published_params,
)
from planner.model.shape import ModelShape

PRESETS = load_model_presets()
REQUIRED = [
    "Llama 2 7B", "Llama 2 13B", "Llama 2 70B", "Llama 3.1 8B", "Llama 3.1 70B", "Llama 3.1 405B",
    "Llama 3.2 1B", "Llama 3.2 3B", "Mistral 7B v0.3", "Mixtral 8x7B", "Mixtral 8x22B", "Qwen2.5 0.5B",
    "Qwen2.5 1.5B", "Qwen2.5 3B", "Qwen2.5 7B", "Qwen2.5 14B", "Qwen2.5 32B", "Qwen2.5 72B", "Gemma 2 2B",
    "Gemma 2 9B", "Gemma 2 27B", "Phi-3 mini 4k", "Phi-3 medium 4k", "DeepSeek-V3", "GPT-2 small",
    "GPT-2 medium", "GPT-2 large", "GPT-2 XL", "GPT-3 175B",
]  # fmt: skip
# Every MPT size in reference/calibration.csv (llm-foundry benchmark rows LF-01..LF-26).
MPT_SIZES = ["125m", "350m", "760m", "1b", "3b", "7b", "13b", "30b", "70b"]


def test_schema_columns_and_types():
    assert PRESETS.schema == pl.Schema(MODEL_SCHEMA)
    shape_columns = [column for column in MODEL_SCHEMA if column in ModelShape.model_fields]
    # every shape field, in declaration order; a vision encoder comes from the vision-language presets
    assert shape_columns == [name for name in ModelShape.model_fields if name != "vision"]
    assert PRESETS["source"].str.starts_with("https://").all()


@pytest.mark.parametrize(
    "name", REQUIRED + [f"MPT-{size} (llm-foundry benchmark config)" for size in MPT_SIZES]
)
def test_required_presets_exist(name):
    assert find_model(PRESETS, name).name == name


def test_lookup_ignores_case_and_spaces_and_suggests_close_names():
    assert find_model(PRESETS, "  llama 3.1 8b ").hidden_size == 4096
    assert published_params(PRESETS, "gpt-2 xl") == 1_557_611_200
    with pytest.raises(UnknownModelError, match=r"closest: .*Llama 3\.1 8B"):
        find_model(PRESETS, "Llama 3.1 7B")
    with pytest.raises(ValueError, match="no preset named"):
        published_params(PRESETS, "zzzz")
    assert len(preset_names(PRESETS)) == PRESETS.height >= 25


def _write_variant(tmp_path, row_index: int, column: str, value: str):
    """A copy of models.csv with one cell changed (row_index counts data rows from 1)."""
    frame = pl.read_csv(MODELS_CSV, infer_schema=False)
    frame = frame.with_columns(
        pl.when(pl.int_range(pl.len()) == row_index - 1)
        .then(pl.lit(value))
        .otherwise(pl.col(column))
        .alias(column)
    )
    path = tmp_path / "models_bad.csv"
    frame.write_csv(path)
    return path


@pytest.mark.parametrize(
    ("row", "column", "value", "problem"),
    [
        (3, "hidden_size", "4k", "expected an integer"),
        (5, "tied_embeddings", "yes", "true or false"),
        (7, "as_of", "30/11/2026", "YYYY-MM-DD"),
        (2, "source", "", "required value is empty"),
        (4, "n_heads / n_kv_heads", "7", "must be a multiple of n_kv_heads"),
        (6, "mlp_kind", "relu2", "Input should be"),
        (8, "n_params_published", "-5", "positive"),
        (9, "name", "llama 2 7b", "duplicate of data row 1"),
        (10, "family", "Mixtral", "unknown family 'Mixtral'"),
    ],
)
def test_bad_cells_are_named_by_file_row_and_column(tmp_path, row, column, value, problem):
    path = _write_variant(tmp_path, row, column.split(" / ")[-1], value)
    with pytest.raises(ModelCatalogError) as caught:
        load_model_presets(path)
    message = str(caught.value)
    assert f"models_bad.csv, data row {row}, column {column!r}" in message
    assert problem in message


def test_missing_column_and_missing_file(tmp_path):
    path = tmp_path / "short.csv"
    pl.read_csv(MODELS_CSV, infer_schema=False).drop("head_dim").write_csv(path)
    with pytest.raises(ModelCatalogError, match=r"short.csv: missing columns \['head_dim'\]"):
        load_model_presets(path)
    with pytest.raises(ModelCatalogError, match=r"nothere\.csv: cannot read"):
        load_model_presets(tmp_path / "nothere.csv")
