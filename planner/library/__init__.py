"""The team plan library: named plans in a real database, shared by every dashboard replica and the CLI.

SQLAlchemy 2 over an embedded SQLite file by default, or the PostgreSQL that `PLANNER_DB_URL` names
(`connect`); the schema is the `tables` module and changes only through the Alembic migrations beside it;
`store.PlanLibrary` saves, lists, deletes (softly, with undo) and refuses stale saves; `records` turns a stored
row back into a validated Scenario, or says why an older plan no longer validates and how it can be repaired.
"""
