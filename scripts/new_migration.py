"""Write a new Alembic migration for a change to planner/library/tables.py.

Alembic compares the tables module with a scratch SQLite database migrated to the newest revision and writes
the difference as planner/library/migrations/versions/<rev>_<slug>.py. Read it before committing: SQLite-only
details (batch mode) and data moves need a human. tests/test_library.py fails until the migration exists,
because it compares the migrated schema with the tables module on SQLite and PostgreSQL.

Usage: python scripts/new_migration.py "add a description column"
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from alembic import command

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.library.connect import alembic_config, create_library_engine, upgrade


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("message", help="what the migration changes, in a few words")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        engine = create_library_engine(f"sqlite:///{scratch}/scratch.sqlite3")
        upgrade(engine)
        with engine.begin() as connection:
            revision = command.revision(alembic_config(connection), message=args.message, autogenerate=True)
    path = getattr(revision, "path", None)
    sys.stdout.write(f"wrote {path}\n" if path else "no revision written\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
