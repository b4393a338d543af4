"""The runner a configuration names (`mapreduce.framework.name`): local, processes or spark."""

from __future__ import annotations

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.mapred.runner import LocalRunner, Runner

FRAMEWORKS = ("local", "processes", "spark")


def make_runner(conf: Configuration, num_tasks: int | None = None) -> Runner:
    """The runner `mapreduce.framework.name` names."""
    name = conf.get_str("mapreduce.framework.name").strip().lower()
    if name == "local":
        return LocalRunner(conf, num_tasks)
    if name == "processes":
        from nutch2.mapred.processes import ProcessRunner

        return ProcessRunner(conf, num_tasks)
    if name == "spark":
        from nutch2.mapred.spark import SparkRunner

        return SparkRunner(conf, num_tasks)
    raise ConfigError(f"mapreduce.framework.name={name!r} is not a runner; use one of {', '.join(FRAMEWORKS)}")
