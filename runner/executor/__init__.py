"""The step executor: experiments declared in code, run on Ray with status, leases and provenance.

Public surface (others import these, nothing deeper):

- declaring: :class:`Step`, :class:`Resources`, :class:`StepContext`, :func:`ref`, :func:`this_output`
- running: :func:`plan_experiment`, :func:`run_experiment`, :func:`load_experiment`, :class:`RunOptions`,
  :class:`RunReport`
- records (read by the bot and the site): :class:`StepRecord`, :class:`StatusRecord`, :class:`LeaseRecord`,
  :class:`ExperimentRecord`, :class:`ExperimentStep`, :class:`LaunchInfo`, :class:`GitInfo`,
  :func:`parse_record`, and the file names ``STATUS_FILE``, ``LEASE_FILE``, ``STEP_RECORD_FILE``
- dispatch on a Ray cluster (the bot): ``runner.executor.dispatch`` (``submit``, ``status``, ``cancel``,
  ``run_id``)
"""

from runner.executor.engine import RunOptions, RunReport, experiment_record_path
from runner.executor.launch import plan_experiment, resolve_prefix, run_experiment
from runner.executor.loader import Experiment, ExperimentError, load_experiment
from runner.executor.records import (
    EXPERIMENTS_DIR,
    LEASE_FILE,
    RECORD_SCHEMA_VERSION,
    STATUS_FILE,
    STEP_RECORD_FILE,
    ExperimentRecord,
    ExperimentStep,
    GitInfo,
    LaunchInfo,
    LeaseRecord,
    RecordError,
    StatusRecord,
    StepRecord,
    StepStatus,
    parse_record,
)
from runner.executor.step import Resources, Step, StepContext, StepError, ref, this_output

__all__ = [
    "EXPERIMENTS_DIR",
    "LEASE_FILE",
    "RECORD_SCHEMA_VERSION",
    "STATUS_FILE",
    "STEP_RECORD_FILE",
    "Experiment",
    "ExperimentError",
    "ExperimentRecord",
    "ExperimentStep",
    "GitInfo",
    "LaunchInfo",
    "LeaseRecord",
    "RecordError",
    "Resources",
    "RunOptions",
    "RunReport",
    "StatusRecord",
    "Step",
    "StepContext",
    "StepError",
    "StepRecord",
    "StepStatus",
    "experiment_record_path",
    "load_experiment",
    "parse_record",
    "plan_experiment",
    "ref",
    "resolve_prefix",
    "run_experiment",
    "this_output",
]
