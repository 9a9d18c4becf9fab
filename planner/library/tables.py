"""The library's schema, as SQLAlchemy Core tables. Any change here needs a new migration in migrations/versions
(tests/test_library.py compares this metadata with the migrated database, so a forgotten migration fails)."""

from __future__ import annotations

from sqlalchemy import (
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    text,
)

from planner.inputs.scenario_set import MAX_NAME_CHARS

MAX_AUTHOR_CHARS = 80  # a person's name or handle; the app asks for it once per session
MAX_TAG_CHARS = 40
MAX_TAGS = 20  # enough to file a plan by project, model family and stage; more is a description, not tags
MAX_PLAN_ID = 2**31 - 1  # the id column is PostgreSQL's 4-byte integer (SQLite's holds as many)
# Names are compared by their folded key (planner.library.names.fold_name: lookalikes are one name), shown as
# typed; the same name may exist again once the first plan is deleted (soft delete).
metadata = MetaData()

plans = Table(
    "plans",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(MAX_NAME_CHARS), nullable=False),
    Column("name_key", Text, nullable=False),  # the folded name; NFKC may lengthen it, so no length limit
    Column("scenario_json", Text, nullable=False),  # the Scenario as validated JSON when it was saved
    Column("planner_version", String(40), nullable=False),
    Column("author", String(MAX_AUTHOR_CHARS), nullable=False),  # who created the plan
    Column("updated_by", String(MAX_AUTHOR_CHARS), nullable=False),  # who saved the current version
    Column("tags", Text, nullable=False),  # a JSON list of strings
    # Copied out of the scenario at save time so search runs in the database, not over every plan's JSON.
    Column("model", String(120), nullable=False),
    Column("gpu", String(120), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Column("version", Integer, nullable=False),  # 1 on creation, +1 on every save: the stale-save check
    Column("deleted_at", DateTime(timezone=True), nullable=True),  # soft delete: set, and undo clears it
    # One live plan per folded name; deleted plans keep theirs without blocking it.
    Index(
        "uq_plans_live_name_key",
        "name_key",
        unique=True,
        sqlite_where=text("deleted_at IS NULL"),
        postgresql_where=text("deleted_at IS NULL"),
    ),
)

# Imported training runs (planner.runs): what a real run measured, optionally attached to a saved plan to
# compare plan with actual. The figures stay as JSON (their keys are planner.runs.record.FIGURES), so a new
# figure needs no migration.
runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("plan_id", Integer, ForeignKey("plans.id"), nullable=True, index=True),
    Column("source_file", String(255), nullable=False),  # the log's file name as uploaded
    Column("log_format", String(40), nullable=False),
    Column("figures_json", Text, nullable=False),
    Column("config_json", Text, nullable=False),  # case-file columns the log or its config files stated
    Column("notes", Text, nullable=False),
    Column("author", String(MAX_AUTHOR_CHARS), nullable=False),
    Column("imported_at", DateTime(timezone=True), nullable=False),
)

# Team calibrations (planner.runs.calibration): scale factors per GPU and regime with the runs they came from
# and their leave-one-run-out errors; the newest row of a (gpu, regime) is the one offered.
calibrations = Table(
    "calibrations",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("gpu", String(120), nullable=False),
    Column("regime", String(40), nullable=False),
    Column("time_scale", Float, nullable=False),
    Column("memory_scale", Float, nullable=False),
    Column("run_ids_json", Text, nullable=False),
    Column("loo_json", Text, nullable=False),
    Column("notes", Text, nullable=False),
    Column("author", String(MAX_AUTHOR_CHARS), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Index("ix_calibrations_gpu_regime", "gpu", "regime"),
)
