"""Where the dashboard's files are: the repository checkout, or the `planner_app` bundle an install ships.

The repository keeps app.py, app_pages/, ui/, data/ and .streamlit/ at its top level (DESIGN.md §2). A wheel
cannot put them there, so `pip install .` copies them into a `planner_app` folder beside this package
(pyproject.toml, [tool.setuptools]). An editable install imports `planner` from the checkout, so it finds the
checkout's files.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["BUNDLE_NAME", "app_script", "bundle_dir", "bundled_data_dir", "streamlit_config_file"]

BUNDLE_NAME = "planner_app"
# site-packages in an install, the repository root in a checkout.
_PACKAGE_PARENT = (
    Path(__file__).resolve().parents[2]
)  # planner/catalogue/paths.py -> the folder above planner


def bundle_dir() -> Path:
    """The folder that holds app.py, app_pages/, ui/, data/ and .streamlit/config.toml."""
    installed = _PACKAGE_PARENT / BUNDLE_NAME
    return installed if (installed / "app.py").is_file() else _PACKAGE_PARENT


def bundled_data_dir() -> Path:
    """The CSV catalogues shipped with the code (a team's overlay folder is merged over them elsewhere)."""
    return bundle_dir() / "data"


def app_script() -> Path:
    """The Streamlit entry script; Streamlit puts its folder on sys.path, so `import ui` works beside it."""
    return bundle_dir() / "app.py"


def streamlit_config_file() -> Path:
    """Streamlit reads this file because it sits in `.streamlit/` beside the main script."""
    return bundle_dir() / ".streamlit" / "config.toml"
