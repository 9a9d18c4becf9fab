"""Alembic's environment for the plan library: always run on a connection that `connect.upgrade` passes in
(so the app, the CLI and the tests migrate the database they are about to use, under the lock they hold)."""

from __future__ import annotations

from alembic import context

from planner.library.tables import metadata

connection = context.config.attributes["connection"]
# render_as_batch: SQLite cannot ALTER most column properties; batch mode rebuilds the table instead.
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
