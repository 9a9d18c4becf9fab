"""The plans table: one row a plan, the scenario as JSON, a version number for stale saves, soft delete.

Revision ID: 0001
Revises:
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "plans",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(80), nullable=False),
        sa.Column("scenario_json", sa.Text, nullable=False),
        sa.Column("planner_version", sa.String(40), nullable=False),
        sa.Column("author", sa.String(80), nullable=False),
        sa.Column("updated_by", sa.String(80), nullable=False),
        sa.Column("tags", sa.Text, nullable=False),
        sa.Column("model", sa.String(120), nullable=False),
        sa.Column("gpu", sa.String(120), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index(
        "uq_plans_live_name",
        "plans",
        ["name"],
        unique=True,
        sqlite_where=sa.text("deleted_at IS NULL"),
        postgresql_where=sa.text("deleted_at IS NULL"),
    )


def downgrade() -> None:
    op.drop_index("uq_plans_live_name", table_name="plans")
    op.drop_table("plans")
