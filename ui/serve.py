"""`make run`'s server: every module the pages need is imported first, then Streamlit's own `streamlit run`.

Why: Streamlit runs app.py only when a browser opens a session, so on a plain `streamlit run` the first visitor
waited for the imports (`ui.warmup.import_everything`, about 1.5 s of a 2-core machine) after the server had
already answered. Here the server answers once they are done, and the first page only runs the page itself.
Usage: `python -m ui.serve app.py [streamlit run's options]`.
"""

from __future__ import annotations

import sys

from ui.warmup import import_everything


def main(argv: list[str]) -> None:
    import_everything()
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", *argv]
    cli.main()


if __name__ == "__main__":
    main(sys.argv[1:])
