"""Model presets: `data/models.csv` loaded with an explicit schema, validated, and looked up by name."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import ValidationError

from planner.catalogue.paths import bundled_data_dir
from planner.errors import PlannerError, from_validation_error
from planner.model.architecture import KNOWN_FAMILIES
from planner.model.multimodal_presets import MULTIMODAL_NAMES
from planner.model.shape import ModelShape

DATA_DIR = bundled_data_dir()
MODELS_CSV = DATA_DIR / "models.csv"

# Column order of data/models.csv: name, family, the other ModelShape fields in declaration order, then facts.
MODEL_SCHEMA: dict[str, Any] = {
    "name": pl.String,
    "family": pl.String,  # HF model_type; selects the layout rules in planner.model.architecture.FAMILY_RULES
    "vocab_size": pl.Int64,
    "hidden_size": pl.Int64,
    "n_layers": pl.Int64,
    "n_heads": pl.Int64,
    "n_kv_heads": pl.Int64,
    "head_dim": pl.Int64,
    "ffn_hidden": pl.Int64,
    "mlp_kind": pl.String,
    "norm_kind": pl.String,
    "tied_embeddings": pl.Boolean,
    "learned_pos_embeddings": pl.Int64,
    "attn_bias": pl.Boolean,
    "mlp_bias": pl.Boolean,
    "context_len": pl.Int64,
    "n_experts": pl.Int64,
    "n_experts_active": pl.Int64,
    "n_shared_experts": pl.Int64,
    "moe_ffn_hidden": pl.Int64,
    "n_dense_layers": pl.Int64,
    # multi-head latent attention (planner/model/latent_attention.py): blank = not MLA (0)
    "q_lora_rank": pl.Int64,
    "kv_lora_rank": pl.Int64,
    "qk_nope_head_dim": pl.Int64,
    "qk_rope_head_dim": pl.Int64,
    "v_head_dim": pl.Int64,
    "n_params_published": pl.Int64,
    "n_params_active_published": pl.Int64,  # empty for dense models
    "source": pl.String,
    "as_of": pl.Date,
    "note": pl.String,
}
MLA_COLUMNS = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
# A presets file written before latent attention lacks its columns: read as blank (no model uses MLA).
OPTIONAL_COLUMNS = frozenset({"n_params_active_published", "note", *MLA_COLUMNS})
BOOLEAN_TEXT = {"true": True, "false": False}


class ModelCatalogError(ValueError):
    """The presets file is unreadable or a cell is invalid; the message names file, row and column."""


class UnknownModelError(PlannerError):
    """No preset has that name; `closest` lists the closest names."""


def _fail(path: Path, row: int | None, column: str, problem: str) -> ModelCatalogError:
    where = f"{path.name}, data row {row}" if row is not None else path.name
    return ModelCatalogError(f"{where}, column {column!r}: {problem}")


def _first_bad_row(raw: pl.Series, parsed: pl.Series) -> int | None:
    bad = (raw.is_not_null() & parsed.is_null()).arg_true()
    return int(bad[0]) + 1 if len(bad) else None


def _parse_column(path: Path, raw: pl.Series, dtype: Any) -> pl.Series:
    """Text cells → typed column; the first cell that does not parse raises, naming its row."""
    if dtype == pl.Boolean:
        parsed = raw.str.to_lowercase().replace_strict(BOOLEAN_TEXT, default=None, return_dtype=pl.Boolean)
        expected = "true or false"
    elif dtype == pl.Date:
        parsed = raw.str.to_date("%Y-%m-%d", strict=False)
        expected = "a date YYYY-MM-DD"
    elif dtype == pl.Int64:
        parsed = raw.str.strip_chars().cast(pl.Int64, strict=False)
        expected = "an integer"
    else:
        return raw
    bad_row = _first_bad_row(raw, parsed)
    if bad_row is not None:
        raise _fail(path, bad_row, raw.name, f"expected {expected}, got {raw[bad_row - 1]!r}")
    return parsed


def _check_required(path: Path, frame: pl.DataFrame) -> None:
    for column in MODEL_SCHEMA:
        if column in OPTIONAL_COLUMNS:
            continue
        empty = frame[column].is_null().arg_true()
        if len(empty):
            raise _fail(path, int(empty[0]) + 1, column, "required value is empty")


def _check_rows(path: Path, frame: pl.DataFrame) -> None:
    seen: dict[str, int] = {}
    for index, row in enumerate(frame.iter_rows(named=True), start=1):
        key = row["name"].strip().lower()
        if key in seen:
            raise _fail(path, index, "name", f"duplicate of data row {seen[key]} ({row['name']!r})")
        seen[key] = index
        if row["family"] not in KNOWN_FAMILIES:
            raise _fail(
                path, index, "family", f"unknown family {row['family']!r}; known: {sorted(KNOWN_FAMILIES)}"
            )
        try:
            shape_from_row(row)
        except ValidationError as err:
            problem = from_validation_error(err, ModelShape)
            raise _fail(path, index, " / ".join(problem.fields), problem.describe("")) from None
        if row["n_params_published"] <= 0:
            raise _fail(path, index, "n_params_published", "must be a positive integer")
        active = row["n_params_active_published"]
        if active is not None and not 0 < active <= row["n_params_published"]:
            raise _fail(path, index, "n_params_active_published", "must be in (0, n_params_published]")


def load_model_presets(path: Path | str = MODELS_CSV) -> pl.DataFrame:
    """Read and validate the presets file; every column gets its `MODEL_SCHEMA` type."""
    path = Path(path)
    try:
        raw = pl.read_csv(path, infer_schema=False)
    except (OSError, pl.exceptions.PolarsError) as err:
        raise ModelCatalogError(f"{path.name}: cannot read ({err})") from None
    raw = raw.with_columns(pl.lit(None, pl.String).alias(c) for c in MLA_COLUMNS if c not in raw.columns)
    missing = [column for column in MODEL_SCHEMA if column not in raw.columns]
    extra = [column for column in raw.columns if column not in MODEL_SCHEMA]
    if missing or extra:
        raise ModelCatalogError(f"{path.name}: missing columns {missing}, unexpected columns {extra}")
    raw = raw.with_columns(  # a blank or quoted-empty cell means "not given"
        pl.when(pl.col(column).str.strip_chars() != "").then(pl.col(column)).alias(column)
        for column in raw.columns
    )
    frame = pl.DataFrame([_parse_column(path, raw[column], dtype) for column, dtype in MODEL_SCHEMA.items()])
    _check_required(path, frame)
    _check_rows(path, frame)
    return frame.cast(MODEL_SCHEMA)  # type: ignore[arg-type]


def shape_from_row(row: dict[str, Any]) -> ModelShape:
    """A `ModelShape` from one presets row (extra columns such as source and note are dropped)."""
    fields = {name: row[name] for name in ModelShape.model_fields if name in MODEL_SCHEMA}  # not `vision`
    return ModelShape.model_validate({**fields, **{c: fields[c] or 0 for c in MLA_COLUMNS}})


def preset_names(presets: pl.DataFrame, multimodal: bool = False) -> list[str]:
    """The presets' names; with `multimodal`, the vision-language and diffusion presets after them."""
    return presets["name"].to_list() + (list(MULTIMODAL_NAMES) if multimodal else [])


class ModelIndex:
    """Preset rows by name (case and surrounding spaces ignored); each shape is built once, on first use."""

    def __init__(self, presets: pl.DataFrame) -> None:
        self.rows = {str(row["name"]).strip().lower(): row for row in presets.iter_rows(named=True)}
        self._shapes: dict[str, ModelShape] = {}

    def row(self, name: str) -> dict[str, Any]:
        wanted = name.strip().lower()
        row = self.rows.get(wanted)
        if row is not None:
            return dict(row)
        by_lower = {key: str(row["name"]) for key, row in self.rows.items()}
        close = difflib.get_close_matches(wanted, list(by_lower), n=3, cutoff=0.4)
        problem = f"no preset named {name!r}" + ("" if close else f" among the {len(by_lower)} presets")
        raise UnknownModelError("model", problem, closest=[by_lower[c] for c in close])

    def find(self, name: str) -> ModelShape:
        """The preset called `name` (a frozen ModelShape, so it is shared safely)."""
        key = name.strip().lower()
        shape = self._shapes.get(key)
        if shape is None:
            shape = self._shapes[key] = shape_from_row(self.row(name))
        return shape

    def published_params(self, name: str) -> int:
        """The parameter count the model's source states (exact where it gives one)."""
        return int(self.row(name)["n_params_published"])


def find_model(presets: pl.DataFrame, name: str) -> ModelShape:
    """The preset called `name` in a bare presets frame (a `Catalogs` keeps its index: `cats.model`)."""
    return ModelIndex(presets).find(name)


def published_params(presets: pl.DataFrame, name: str) -> int:
    return ModelIndex(presets).published_params(name)
