"""Training Run Planner: does a training run fit, how long does it take, what does it cost, how much energy.

The public API. The dashboard (app.py, app_pages/, ui/) imports only these names, and so can a notebook:

    from planner import Scenario, default_catalogs, estimate
    cats = default_catalogs()                      # or catalogs_from_environment() for a team folder
    result = estimate(Scenario(model="Llama 3.1 8B", gpu="H100 SXM", n_gpus=8), cats)
    result.wall_clock_h, result.cost_usd, result.peak_gib_per_device, result.fits_vram

The pipeline reads as the package does: a `Scenario` (planner.inputs) and the catalogues (planner.catalogue)
go through `resolve` (typed input columns) and `evaluate` (every formula of planner.formulas, one row or a
million) into an `Estimate`; planner.decide compares GPUs, suggests fixes and searches plans over the same
`evaluate`; planner.cases predicts published measurements through that same path (`validate_cases`);
planner.export writes a plan as another framework's configuration (`export_plan`).
"""

import importlib
from typing import TYPE_CHECKING, Any

from planner.cases.case_file import load_case_file
from planner.cases.validate import validate_cases
from planner.catalogue.catalog import (
    DATA_DIR_ENV,
    UPLOAD,
    CatalogError,
    Catalogs,
    LayerFile,
    catalogs_from_environment,
    default_catalogs,
    overlay,
)
from planner.catalogue.catalog_overlay import TEAM_FILES, unread_files
from planner.catalogue.catalog_read import CATALOGUE_FILE as CATALOGUE_FILE_LIMIT
from planner.catalogue.catalog_tables import MAX_SNAPSHOT_ID_CHARS, SNAPSHOT_ID, snapshot_date
from planner.catalogue.models import preset_names
from planner.catalogue.paths import bundle_dir, bundled_data_dir
from planner.decide.compare import MAX_GPUS as COMPARE_MAX_GPUS
from planner.decide.compare import (
    OVERRIDE_FIELDS,
    SORT_METRICS,
    compare_gpus,
    filter_rows,
    pareto_frontier,
    sort_rows,
)
from planner.decide.explore import (
    MAX_SCALING_GPUS,
    memory_vs_micro_batch,
    parameter_breakdown,
    scaling_curve,
    suggest_fixes,
)
from planner.decide.scenario_results import headline_results, read_saved_scenarios, saved_scenarios_csv
from planner.decide.sheet import (
    SHEET_INPUT_COLUMNS,
    SHEET_RESULT_COLUMNS,
    evaluate_rows,
    pick_lists,
    result_cells,
    sheet_inputs,
    with_cell,
)
from planner.decide.sweep import OBJECTIVES, Constraints, SearchResult, priced_gpus, scenario_for, search
from planner.decide.sweep_grid import DEFAULT_MAX_GPUS, SearchSpace, target_batch_sequences
from planner.decide.sweep_words import label
from planner.errors import PlannerError, from_validation_error, shortened
from planner.estimate import estimate, estimate_resolved
from planner.export.export_types import TARGET_VERSIONS as EXPORT_TARGET_VERSIONS
from planner.export.export_types import Export
from planner.export.exporters import EXPORT_TARGETS, export_plan
from planner.formulas.cost import EXPERIMENTS_MULTIPLIER_GUIDANCE
from planner.formulas.energy import GPU_UTIL_EXPLANATION, PUE_EXPLANATION
from planner.inputs.errors import scenario_error
from planner.inputs.numbers import number_text, parse_field_number, parse_number
from planner.inputs.query import PAGE_PARAMETERS, drop_unknown_names, scenario_from_query, scenario_to_query
from planner.inputs.safe_csv import csv_number, safe_csv
from planner.inputs.scenario import CUSTOM_MODEL, Scenario
from planner.inputs.scenario_io import MAX_CSV_BYTES, ScenarioImport
from planner.inputs.scenario_set import (
    MAX_NAME_CHARS,
    MAX_SAVED,
    comparison_rows,
    copy_name,
    name_problem,
    renamed,
    summary_rows,
)
from planner.model.hf_config import shape_from_hf_config
from planner.model.shape import ModelShape
from planner.resolve import Resolved, resolve, with_sequence_length
from planner.results import Estimate
from planner.views import co2e_by_region, energy_components, memory_components

# The plan library (SQLAlchemy and Alembic, about 0.3 s of imports) loads on first use, so a CLI command that
# needs no database starts without it (a refused input exits at once: tests/test_bounded_inputs.py).
_LAZY_LIBRARY_NAMES = {
    "DB_URL_ENV": "planner.library.connect",
    "LibraryUnavailable": "planner.library.connect",
    "library_url": "planner.library.connect",
    "open_library": "planner.library.opening",
    "StoredPlan": "planner.library.records",
    "repaired": "planner.library.records",
    "split_tags": "planner.library.records",
    "NameTaken": "planner.library.refusals",
    "PlanNotFound": "planner.library.refusals",
    "StalePlanError": "planner.library.refusals",
    "CONFLICT_TAG": "planner.library.store",
    "ImportReport": "planner.library.store",
    "PlanLibrary": "planner.library.store",
    "MAX_AUTHOR_CHARS": "planner.library.tables",
    "MAX_TAG_CHARS": "planner.library.tables",
}
if TYPE_CHECKING:
    from planner.library.connect import DB_URL_ENV, LibraryUnavailable, library_url
    from planner.library.opening import open_library
    from planner.library.records import StoredPlan, repaired, split_tags
    from planner.library.refusals import NameTaken, PlanNotFound, StalePlanError
    from planner.library.store import CONFLICT_TAG, ImportReport, PlanLibrary
    from planner.library.tables import MAX_AUTHOR_CHARS, MAX_TAG_CHARS


def __getattr__(name: str) -> Any:
    if name in _LAZY_LIBRARY_NAMES:
        return getattr(importlib.import_module(_LAZY_LIBRARY_NAMES[name]), name)
    raise AttributeError(f"module 'planner' has no attribute {name!r}")


__all__ = [  # noqa: RUF022 (grouped by part of the pipeline, the core first, not sorted)
    # The core: a plan in, its figures out.
    "Scenario",
    "ModelShape",
    "Catalogs",
    "default_catalogs",
    "catalogs_from_environment",
    "resolve",
    "Resolved",
    "with_sequence_length",
    "estimate",
    "estimate_resolved",
    "Estimate",
    "compare_gpus",
    "search",
    "Constraints",
    "SearchResult",
    "validate_cases",
    "PlannerError",
    # Inputs: errors, share links, saved sets and their CSV form.
    "CUSTOM_MODEL",
    "scenario_error",
    "from_validation_error",
    "PAGE_PARAMETERS",
    "drop_unknown_names",
    "scenario_from_query",
    "scenario_to_query",
    "number_text",
    "parse_field_number",
    "parse_number",
    "shortened",
    "safe_csv",
    "csv_number",
    "MAX_CSV_BYTES",
    "ScenarioImport",
    "MAX_NAME_CHARS",
    "MAX_SAVED",
    "comparison_rows",
    "copy_name",
    "name_problem",
    "renamed",
    "summary_rows",
    "shape_from_hf_config",
    # The team plan library: plans in SQLite or PostgreSQL, shared by the app and the CLI.
    "open_library",
    "PlanLibrary",
    "StoredPlan",
    "ImportReport",
    "StalePlanError",
    "NameTaken",
    "PlanNotFound",
    "LibraryUnavailable",
    "CONFLICT_TAG",
    "MAX_AUTHOR_CHARS",
    "MAX_TAG_CHARS",
    "DB_URL_ENV",
    "library_url",
    "repaired",
    "split_tags",
    # Catalogues: the team folder, session uploads, presets, where the bundled files are.
    "CatalogError",
    "DATA_DIR_ENV",
    "UPLOAD",
    "TEAM_FILES",
    "CATALOGUE_FILE_LIMIT",
    "unread_files",
    "snapshot_date",
    "LayerFile",
    "overlay",
    "MAX_SNAPSHOT_ID_CHARS",
    "SNAPSHOT_ID",
    "preset_names",
    "bundle_dir",
    "bundled_data_dir",
    # Decisions and views over evaluated rows.
    "OVERRIDE_FIELDS",
    "COMPARE_MAX_GPUS",
    "SORT_METRICS",
    "filter_rows",
    "pareto_frontier",
    "sort_rows",
    "memory_vs_micro_batch",
    "parameter_breakdown",
    "scaling_curve",
    "MAX_SCALING_GPUS",
    "suggest_fixes",
    "headline_results",
    "SHEET_INPUT_COLUMNS",
    "SHEET_RESULT_COLUMNS",
    "evaluate_rows",
    "pick_lists",
    "result_cells",
    "sheet_inputs",
    "with_cell",
    "read_saved_scenarios",
    "saved_scenarios_csv",
    "OBJECTIVES",
    "priced_gpus",
    "scenario_for",
    "DEFAULT_MAX_GPUS",
    "SearchSpace",
    "target_batch_sequences",
    "label",
    "co2e_by_region",
    "energy_components",
    "memory_components",
    # Words the pages show beside the figures.
    "EXPERIMENTS_MULTIPLIER_GUIDANCE",
    "GPU_UTIL_EXPLANATION",
    "PUE_EXPLANATION",
    # Published measurements.
    "load_case_file",
    # Configuration exports: the plan as DeepSpeed, accelerate, torchtune, torchtitan or Megatron-LM input.
    "export_plan",
    "EXPORT_TARGET_VERSIONS",
    "EXPORT_TARGETS",
    "Export",
]
