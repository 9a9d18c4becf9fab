"""Lookalike plan names are one name: a folded key beside each display name, unique among live plans.

Existing plans get their key from planner.library.names.fold_name. Live plans whose names fold to the same key
(they looked the same) are kept, each but the oldest renamed to "<name> (plan <id>)" so nothing is lost and the
list shows them apart. Changing fold_name later needs a migration that recomputes the keys.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from planner.library.names import fold_name

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

MAX_NAME_CHARS = 80  # the name column's length in revision 0001


def upgrade() -> None:
    op.drop_index("uq_plans_live_name", table_name="plans")
    op.add_column("plans", sa.Column("name_key", sa.Text, nullable=True))
    plans = sa.table(
        "plans", sa.column("id"), sa.column("name"), sa.column("name_key"), sa.column("deleted_at")
    )
    connection = op.get_bind()
    rows = connection.execute(sa.select(plans.c.id, plans.c.name, plans.c.deleted_at).order_by(plans.c.id))
    live_keys: set[str] = set()
    for plan_id, name, deleted_at in rows.all():
        key = fold_name(name)
        if deleted_at is None and key in live_keys:
            suffix = f" (plan {plan_id})"
            name = name[: MAX_NAME_CHARS - len(suffix)].rstrip() + suffix
            key = fold_name(name)
        if deleted_at is None:
            live_keys.add(key)
        connection.execute(sa.update(plans).where(plans.c.id == plan_id).values(name=name, name_key=key))
    # render_as_batch: SQLite rebuilds the table to make the column NOT NULL (no index on it yet to carry over)
    with op.batch_alter_table("plans") as batch:
        batch.alter_column("name_key", existing_type=sa.Text, nullable=False)
    op.create_index(
        "uq_plans_live_name_key",
        "plans",
        ["name_key"],
        unique=True,
        sqlite_where=sa.text("deleted_at IS NULL"),
        postgresql_where=sa.text("deleted_at IS NULL"),
    )


def downgrade() -> None:
    op.drop_index("uq_plans_live_name_key", table_name="plans")
    with op.batch_alter_table("plans") as batch:
        batch.drop_column("name_key")
    op.create_index(
        "uq_plans_live_name",
        "plans",
        ["name"],
        unique=True,
        sqlite_where=sa.text("deleted_at IS NULL"),
        postgresql_where=sa.text("deleted_at IS NULL"),
    )
