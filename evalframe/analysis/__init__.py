"""Analyses beyond the metrics: confidence calibration, A/B benefit, failure categories.

A layer of its own between ``assess`` (whose statistics it reuses) and
``pipeline`` (which calls :func:`run_analyses` after scoring, before the
gates). Plain data in, plain data out: the report, trackers and the HTML page
read the JSON it writes (calibration.json, benefit.json) or the structures
below. See docs/analyses.md.
"""

from evalframe.analysis.benefit import BenefitResult, compute_benefit, read_arm
from evalframe.analysis.calibration import (
    BootstrapSettings,
    CalibrationResult,
    ReliabilityBin,
    calibrate,
)
from evalframe.analysis.failures import FIXES, LABELS, annotate_failures, categorise
from evalframe.analysis.run import AnalysisOutput, calibration_outcomes, run_analyses
from evalframe.analysis.settings import (
    Analyses,
    AnalysisSettings,
    BenefitSettings,
    CalibrationSettings,
    FailureSettings,
    validate_analysis,
    value_names,
)

__all__ = [
    "FIXES",
    "LABELS",
    "Analyses",
    "AnalysisOutput",
    "AnalysisSettings",
    "BenefitResult",
    "BenefitSettings",
    "BootstrapSettings",
    "CalibrationResult",
    "CalibrationSettings",
    "FailureSettings",
    "ReliabilityBin",
    "annotate_failures",
    "calibrate",
    "calibration_outcomes",
    "categorise",
    "compute_benefit",
    "read_arm",
    "run_analyses",
    "validate_analysis",
    "value_names",
]
