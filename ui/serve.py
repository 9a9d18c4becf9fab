"""The dashboard's server: every module the pages need is imported first, then Streamlit's own `streamlit run`.

Why: Streamlit runs app.py only when a browser opens a session, so on a plain `streamlit run` the first visitor
waited for the imports (`ui.warmup.import_everything`, about 1.5 s of a 2-core machine) after the server had
already answered. Here the server answers once they are done, and the first page only runs the page itself.

Usage: `python -m ui.serve app.py [streamlit run's options]` from a checkout (`make run`), or
`python <app folder>/ui/serve.py <app folder>/app.py [...]` by path (`planner-app`, which may run from an
install where the app's folder is not on the import path).
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> None:
    from ui.warmup import import_everything

    import_everything()
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", *argv]
    cli.main()


if __name__ == "__main__":
    if not __package__:  # run by path: sys.path[0] is ui/ itself, and `ui` must import from the app's folder
        sys.path[0] = str(Path(__file__).resolve().parents[1])
    main(sys.argv[1:])
