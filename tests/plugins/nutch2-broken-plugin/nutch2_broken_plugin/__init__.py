"""broken-example: a plugin that fails to load (a dependency that is not installed)."""

import nutch2_missing_dependency  # noqa: F401

from nutch2.plugin import Plugin

PLUGIN = Plugin("broken-example", {"parse-filter": "nutch2_broken_plugin:Nothing"})
