"""The built-in plugins (Nutch's src/plugin): one folder each, with its PLUGIN descriptor in __init__.py. The plugin
system that finds and builds them is nutch2/plugin/; the extension points they fill live with their concepts."""
