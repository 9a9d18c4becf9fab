"""Imported training runs: what a real run measured, optionally attached to a saved plan (planner.runs).

A new table only; existing plans are untouched. Its revision id names the feature rather than a bare number so
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


def downgrade() -> None:
    op.drop_index("ix_runs_plan_id", table_name="runs")
    op.drop_table("runs")
