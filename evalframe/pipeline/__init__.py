"""Layer 4, the pipeline: the validated experiment (config) and running it end to end.

``from evalframe.pipeline import run_experiment`` keeps working as before the
core was split into layers.
"""

from evalframe.pipeline.config import Experiment, validate_experiment
from evalframe.pipeline.run import PipelineResult, run_experiment
from evalframe.retrieval.retrieve import retrieve_all

__all__ = ["Experiment", "PipelineResult", "retrieve_all", "run_experiment", "validate_experiment"]
