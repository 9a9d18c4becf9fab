"""A case row's model shape: the `ModelShape` its columns describe, as the Scenario's `model_shape`.

The columns give layers, hidden size, heads, MLP width and vocabulary, not the MLP kind (2 or 3 matrices),
tied embeddings or a learned position table; of those variants the one whose parameter count
(`planner.model.architecture.count_params`) is closest to the published `params_b` is taken.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from planner.cases import case_words as words
from planner.cases.case_defaults import default, note
from planner.catalogue.catalog import Catalogs
from planner.catalogue.models import UnknownModelError
from planner.model.architecture import count_params
from planner.model.shape import ModelShape

NEEDED = ("params_b", "n_layers", "hidden", "n_heads")


def case_shape(row: dict[str, str], notes: list[str]) -> ModelShape | str:
    """The row's shape (blank cells by the defaults table, noted in `notes`), or why there is none."""
    missing = [key for key in NEEDED if words.number(row, key) is None]
    if missing:
        return f"no {', '.join(missing)} in the row: the model's shape is needed"
    hidden, n_heads = int(words.number(row, "hidden") or 0), int(words.number(row, "n_heads") or 0)
    for column in ("vocab", "n_kv_heads", "ffn_hidden"):
        if words.number(row, column) is None:
            notes.append(note(column))
    seq_len = int(words.number(row, "seq_len") or 0)
    base: dict[str, Any] = {
        "name": words.text(row, "model")[:120] or "case",
        "vocab_size": int(words.number(row, "vocab") or default("vocab")),
        "hidden_size": hidden,
        "n_layers": int(words.number(row, "n_layers") or 0),
        "n_heads": n_heads,
        "n_kv_heads": int(words.number(row, "n_kv_heads") or n_heads),
        "head_dim": max(hidden // n_heads, 1),
        "ffn_hidden": int(words.number(row, "ffn_hidden") or 4 * hidden),
        "context_len": max(seq_len, 1),
    }
    target = (words.number(row, "params_b") or 0.0) * 1e9
    try:
        candidates = [
            ModelShape.model_validate(
                {**base, "mlp_kind": kind, "tied_embeddings": tied, "learned_pos_embeddings": positions}
            )
            for kind in ("swiglu", "gelu")
            for tied in (False, True)
            for positions in sorted({0, seq_len})
        ]
    except ValidationError as err:
        return f"inconsistent model shape: {err.errors()[0]['msg']}"
    return min(candidates, key=lambda shape: abs(count_params(shape).total - target))


def catalogue_moe_shape(row: dict[str, str], cats: Catalogs, notes: list[str]) -> ModelShape | str:
    """A mixture-of-experts row's shape: the catalogue model its `model` cell names (models.csv holds the
    routed and shared experts, top-k, expert width and dense layers the case columns have no room for),
    its context stretched to the row's sequence length; or why there is none."""
    name = words.text(row, "model")
    try:
        shape = cats.model(name)
    except UnknownModelError:
        return (
            f"mixture-of-experts row: model {name!r} is not in the model catalogue, and the expert layout "
            "is not in the case columns"
        )
    if not shape.is_moe:
        return f"mixture-of-experts row: catalogue model {name!r} has no experts"
    notes.append(f"expert layout from the model catalogue's {shape.name!r}")
    seq_len = int(words.number(row, "seq_len") or 0)
    return shape.model_copy(update={"context_len": max(shape.context_len, seq_len)})
