"""The plugin system (Nutch's org.apache.nutch.plugin): nutch2/plugin/descriptor.py finds the installed plugins and
what they provide, nutch2/plugin/repository.py builds a configuration's active extensions, and
nutch2/plugin/extension.py is what every extension is. The plugins themselves are the folders of nutch2/plugins/
(Nutch's src/plugin) and other packages'; the core never imports one."""

from nutch2.plugin.descriptor import GROUP, POINTS, Plugin, PluginError, descriptor, extension_class, installed
from nutch2.plugin.extension import Extension
from nutch2.plugin.repository import Plugins

__all__ = ["GROUP", "POINTS", "Extension", "Plugin", "PluginError", "Plugins", "descriptor", "extension_class",
           "installed"]
