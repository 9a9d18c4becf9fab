"""`python -m planner ...`: see planner.cli.main."""

from planner.cli.main import main

raise SystemExit(main())
