"""Training Run Planner: does a training run fit, how long does it take, what does it cost, how much energy.

The public API. The dashboard (app.py, app_pages/, ui/) imports only these names, and so can a notebook:

    from planner import Scenario, default_catalogs, estimate
    cats = default_catalogs()                      # or catalogs_from_environment() for a team folder
    result = estimate(Scenario(model="Llama 3.1 8B", gpu="H100 SXM", n_gpus=8), cats)
    result.wall_clock_h, result.cost_usd, result.peak_gib_per_device, result.fits_vram

The pipeline reads as the package does: a `Scenario` (planner.inputs) and the catalogues go through `resolve`
(typed columns) and `evaluate` (every formula, one row or a million; planner.post for post-training) into an
`Estimate`; planner.decide compares GPUs, suggests fixes and searches plans over the same `evaluate`;
planner.cases predicts published measurements through it; planner.export writes a plan for another framework.
"""

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

# Every public name (space-separated), under the module that defines it. Nothing is imported until a name is first used (PEP 562):
# a CLI command loads only what it needs (a refused input exits within a second, tests/test_bounded_inputs.py;
# no database, no SQLAlchemy). The dashboard imports every module once at start (ui/warmup.py).
_PUBLIC_MODULES = {
    "planner.cases.case_file": "load_case_file",
    "planner.cases.validate": "validate_cases",
    "planner.catalogue.catalog": "DATA_DIR_ENV UPLOAD CatalogError Catalogs LayerFile catalogs_from_environment default_catalogs overlay supported_precisions",
    "planner.catalogue.catalog_overlay": "TEAM_FILES unread_files",
    "planner.catalogue.catalog_tables": "MAX_SNAPSHOT_ID_CHARS SNAPSHOT_ID snapshot_date",
    "planner.catalogue.models": "preset_names",
    "planner.catalogue.paths": "bundle_dir bundled_data_dir",
    "planner.decide.compare": "OVERRIDE_FIELDS SORT_METRICS compare_gpus filter_rows sort_rows",
    "planner.decide.frontier": "pareto_frontier",
    "planner.decide.explore": "MAX_SCALING_GPUS memory_vs_micro_batch parameter_breakdown scaling_curve suggest_fixes",
    "planner.decide.scenario_results": "headline_results read_saved_scenarios saved_scenarios_csv",
    "planner.decide.sheet": "SHEET_INPUT_COLUMNS SHEET_MULTIMODAL_INPUT_COLUMNS SHEET_RESULT_COLUMNS evaluate_rows pick_lists result_cells sheet_input_columns sheet_inputs sheet_result_columns sheet_row_problem with_cell",
    "planner.decide.sheet_multimodal": "MULTIMODAL_FLAG_COLUMNS MULTIMODAL_NUMBER_FORMATS MULTIMODAL_TEXT_COLUMNS is_multimodal",
    "planner.decide.sweep": "OBJECTIVES Constraints SearchResult priced_gpus scenario_for search",
    "planner.decide.sweep_grid": "DEFAULT_CP_DEGREES DEFAULT_EXPERT_DEGREES DEFAULT_MAX_GPUS DEFAULT_MICRO_BATCHES DEFAULT_PP_DEGREES DEFAULT_RECOMPUTE SearchSpace target_batch_sequences tensor_parallel_degrees",
    "planner.decide.sweep_generation": "searches_generation",
    "planner.decide.sweep_space": "ANY obeying_space",
    "planner.decide.sweep_words": "label",
    "planner.decide.plan_words": "checkpoint_words human_duration plan_warnings plural",
    "planner.errors": "PlannerError from_validation_error shortened",
    "planner.estimate": "estimate estimate_resolved",
    "planner.export.export_types": "Export",
    "planner.export.exporters": "EXPORT_TARGETS export_plan",
    "planner.formulas.money.cost": "EXPERIMENTS_MULTIPLIER_GUIDANCE",
    "planner.formulas.energy.footprint": "GPU_UTIL_EXPLANATION PUE_EXPLANATION",
    "planner.inputs.errors": "scenario_error",
    "planner.inputs.numbers": "number_text parse_field_number parse_number",
    "planner.inputs.post_training": "COLOCATED_ENGINE_MEMORY_FRAC DEDICATED_ENGINE_MEMORY_FRAC EAGER_DECODE_S_PER_LAYER GRPO_SAMPLES_PER_PROMPT NO_REWARD_MODEL",
    "planner.inputs.query": "PAGE_PARAMETERS drop_unknown_names scenario_from_query scenario_to_query",
    "planner.inputs.safe_csv": "csv_number safe_csv",
    "planner.inputs.scenario": "CUSTOM_MODEL Scenario",
    "planner.inputs.scenario_io": "MAX_CSV_BYTES ScenarioImport",
    "planner.inputs.scenario_set": "MAX_NAME_CHARS MAX_SAVED comparison_rows copy_name name_problem renamed summary_rows",
    "planner.model.hf_config": "shape_from_hf_config",
    "planner.model.shape": "ModelShape",
    "planner.resolve": "Resolved power_limit_refusal precision_refusal resolve with_sequence_length",
    "planner.results": "Estimate",
    "planner.trace.scope": "TRACE_ENABLE_HINT trace_available trace_refusal",
    "planner.views": "co2e_by_region energy_components memory_components step_timeline",
    "planner.library.connect": "DB_URL_ENV LibraryUnavailable library_url",
    "planner.library.opening": "open_library",
    "planner.library.records": "StoredPlan repaired split_tags",
    "planner.library.refusals": "NameTaken PlanNotFound StalePlanError",
    "planner.library.store": "CONFLICT_TAG ImportReport PlanLibrary",
    "planner.library.tables": "MAX_AUTHOR_CHARS MAX_TAG_CHARS",
    "planner.runs.api": "RunLogError RunRecord compare_plan compare_runs fit_team_calibration import_runs save_run",
}
# Public names that differ from the name in their module: public name -> (module, attribute).
_RENAMED = {
    "CATALOGUE_FILE_LIMIT": ("planner.catalogue.catalog_read", "CATALOGUE_FILE"),
    "COMPARE_MAX_GPUS": ("planner.decide.compare", "MAX_GPUS"),
    "EXPORT_TARGET_VERSIONS": ("planner.export.export_types", "TARGET_VERSIONS"),
    "ONLINE_OBJECTIVES": ("planner.inputs.post_training", "ONLINE"),
    "PAIRED_OBJECTIVES": ("planner.inputs.post_training", "PAIRED"),
    "REFERENCE_FREE_OBJECTIVES": ("planner.inputs.post_training", "REFERENCE_FREE"),
}
_PUBLIC_NAMES = {
    name: (module, name) for module, names in _PUBLIC_MODULES.items() for name in names.split()
} | _RENAMED
# The same names for type checkers and editors (tests/test_structure.py keeps the two lists equal).
if TYPE_CHECKING:
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
        supported_precisions,
    )
    from planner.catalogue.catalog_overlay import TEAM_FILES, unread_files
    from planner.catalogue.catalog_read import CATALOGUE_FILE as CATALOGUE_FILE_LIMIT
    from planner.catalogue.catalog_tables import MAX_SNAPSHOT_ID_CHARS, SNAPSHOT_ID, snapshot_date
    from planner.catalogue.models import preset_names
    from planner.catalogue.paths import bundle_dir, bundled_data_dir
    from planner.decide.compare import MAX_GPUS as COMPARE_MAX_GPUS
    from planner.decide.compare import OVERRIDE_FIELDS, SORT_METRICS, compare_gpus, filter_rows, sort_rows
    from planner.decide.explore import (
        MAX_SCALING_GPUS,
        memory_vs_micro_batch,
        parameter_breakdown,
        scaling_curve,
        suggest_fixes,
    )
    from planner.decide.frontier import pareto_frontier
    from planner.decide.plan_words import checkpoint_words, human_duration, plan_warnings, plural
    from planner.decide.scenario_results import headline_results, read_saved_scenarios, saved_scenarios_csv
    from planner.decide.sheet import (
        SHEET_INPUT_COLUMNS,
        SHEET_MULTIMODAL_INPUT_COLUMNS,
        SHEET_RESULT_COLUMNS,
        evaluate_rows,
        pick_lists,
        result_cells,
        sheet_input_columns,
        sheet_inputs,
        sheet_result_columns,
        sheet_row_problem,
        with_cell,
    )
    from planner.decide.sheet_multimodal import (
        MULTIMODAL_FLAG_COLUMNS,
        MULTIMODAL_NUMBER_FORMATS,
        MULTIMODAL_TEXT_COLUMNS,
        is_multimodal,
    )
    from planner.decide.sweep import OBJECTIVES, Constraints, SearchResult, priced_gpus, scenario_for, search
    from planner.decide.sweep_generation import searches_generation
    from planner.decide.sweep_grid import (
        DEFAULT_CP_DEGREES,
        DEFAULT_EXPERT_DEGREES,
        DEFAULT_MAX_GPUS,
        DEFAULT_MICRO_BATCHES,
        DEFAULT_PP_DEGREES,
        DEFAULT_RECOMPUTE,
        SearchSpace,
        target_batch_sequences,
        tensor_parallel_degrees,
    )
    from planner.decide.sweep_space import ANY, obeying_space
    from planner.decide.sweep_words import label
    from planner.errors import PlannerError, from_validation_error, shortened
    from planner.estimate import estimate, estimate_resolved
    from planner.export.export_types import TARGET_VERSIONS as EXPORT_TARGET_VERSIONS
    from planner.export.export_types import Export
    from planner.export.exporters import EXPORT_TARGETS, export_plan
    from planner.formulas.energy.footprint import GPU_UTIL_EXPLANATION, PUE_EXPLANATION
    from planner.formulas.money.cost import EXPERIMENTS_MULTIPLIER_GUIDANCE
    from planner.inputs.errors import scenario_error
    from planner.inputs.numbers import number_text, parse_field_number, parse_number
    from planner.inputs.post_training import (
        COLOCATED_ENGINE_MEMORY_FRAC,
        DEDICATED_ENGINE_MEMORY_FRAC,
        EAGER_DECODE_S_PER_LAYER,
        GRPO_SAMPLES_PER_PROMPT,
        NO_REWARD_MODEL,
    )
    from planner.inputs.post_training import ONLINE as ONLINE_OBJECTIVES
    from planner.inputs.post_training import PAIRED as PAIRED_OBJECTIVES
    from planner.inputs.post_training import REFERENCE_FREE as REFERENCE_FREE_OBJECTIVES
    from planner.inputs.query import (
        PAGE_PARAMETERS,
        drop_unknown_names,
        scenario_from_query,
        scenario_to_query,
    )
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
    from planner.library.connect import DB_URL_ENV, LibraryUnavailable, library_url
    from planner.library.opening import open_library
    from planner.library.records import StoredPlan, repaired, split_tags
    from planner.library.refusals import NameTaken, PlanNotFound, StalePlanError
    from planner.library.store import CONFLICT_TAG, ImportReport, PlanLibrary
    from planner.library.tables import MAX_AUTHOR_CHARS, MAX_TAG_CHARS
    from planner.model.hf_config import shape_from_hf_config
    from planner.model.shape import ModelShape
    from planner.resolve import (
        Resolved,
        power_limit_refusal,
        precision_refusal,
        resolve,
        with_sequence_length,
    )
    from planner.results import Estimate
    from planner.runs.api import (
        RunLogError,
        RunRecord,
        compare_plan,
        compare_runs,
        fit_team_calibration,
        import_runs,
        save_run,
    )
    from planner.trace.scope import TRACE_ENABLE_HINT, trace_available, trace_refusal
    from planner.views import co2e_by_region, energy_components, memory_components, step_timeline


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC_NAMES:
        raise AttributeError(f"module 'planner' has no attribute {name!r}")
    module_name, attribute = _PUBLIC_NAMES[name]
    value = getattr(importlib.import_module(module_name), attribute)
    globals()[name] = value  # later lookups skip this function
    return value


class _PublicPackage(types.ModuleType):
    """The package, whose public names win over its submodules of the same name.

    `planner.resolve` and `planner.estimate` are both a function and a module. Importing a submodule makes
    Python set it as an attribute of the package, which would hide the function from `from planner import
    resolve` once anything had imported `planner.resolve` (eager imports used to rebind the function after).
    The submodules stay importable by their full names (`from planner.resolve import resolve`).
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _PUBLIC_NAMES and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _PublicPackage


__all__ = list(_PUBLIC_NAMES)  # the map's order: by defining module, then the renamed ones
