"""The command line: `python -m planner estimate|schema|compare|recommend|validate` and the `planner-app` launcher."""
