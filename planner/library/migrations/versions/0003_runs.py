"""Imported training runs and team calibrations (planner.runs): what real runs measured, optionally attached
to a saved plan, and the scale factors fitted from them.

New tables only; existing plans are untouched. Its revision id names the feature rather than a bare number so
that another branch's next migration (also after 0002) cannot take the same id: the lead chains them on merge.

Revision ID: 0003_runs
Revises: 0002
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_runs"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("plan_id", sa.Integer(), nullable=True),
        sa.Column("source_file", sa.String(length=255), nullable=False),
        sa.Column("log_format", sa.String(length=40), nullable=False),
        sa.Column("figures_json", sa.Text(), nullable=False),
        sa.Column("config_json", sa.Text(), nullable=False),
        sa.Column("notes", sa.Text(), nullable=False),
        sa.Column("author", sa.String(length=80), nullable=False),
        sa.Column("imported_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["plan_id"], ["plans.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_runs_plan_id", "runs", ["plan_id"], unique=False)
    op.create_table(
        "calibrations",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("gpu", sa.String(length=120), nullable=False),
        sa.Column("regime", sa.String(length=40), nullable=False),
        sa.Column("time_scale", sa.Float(), nullable=False),
        sa.Column("memory_scale", sa.Float(), nullable=False),
        sa.Column("run_ids_json", sa.Text(), nullable=False),
        sa.Column("loo_json", sa.Text(), nullable=False),
        sa.Column("notes", sa.Text(), nullable=False),
        sa.Column("author", sa.String(length=80), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_calibrations_gpu_regime", "calibrations", ["gpu", "regime"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_calibrations_gpu_regime", table_name="calibrations")
    op.drop_table("calibrations")
    op.drop_index("ix_runs_plan_id", table_name="runs")
    op.drop_table("runs")
