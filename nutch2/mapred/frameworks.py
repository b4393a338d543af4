"""The runner a configuration names (`mapreduce.framework.name`): auto (the default), local, processes or spark."""

from __future__ import annotations

import os

from nutch2.config import Configuration
from nutch2.errors import ConfigError
from nutch2.mapred.runner import LocalRunner, Runner

FRAMEWORKS = ("auto", "local", "processes", "spark")


def framework(conf: Configuration) -> str:
    """The runner to use: `auto` is the processes runner on a machine of more than one core with a store that
    worker processes share (sqlite, postgres, hbase, cassandra), so that fetching, parsing and updating use every
    core; else the local runner (one core, or the memory store)."""
    name = conf.get_str("mapreduce.framework.name").strip().lower()
    if name != "auto":
        return name
    from nutch2.stores import store_class
    from nutch2.stores.query import Capability

    shared = store_class(conf).has(Capability.SHARED_PROCESSES)
    return "processes" if shared and (os.cpu_count() or 1) > 1 else "local"


def make_runner(conf: Configuration, num_tasks: int | None = None) -> Runner:
    """The runner `mapreduce.framework.name` names."""
    name = framework(conf)
    if name == "local":
        return LocalRunner(conf, num_tasks)
    if name == "processes":
        from nutch2.mapred.processes import ProcessRunner

        return ProcessRunner(conf, num_tasks)
    if name == "spark":
        from nutch2.mapred.spark import SparkRunner

        return SparkRunner(conf, num_tasks)
    raise ConfigError(f"mapreduce.framework.name={name!r} is not a runner; use one of {', '.join(FRAMEWORKS)}")
