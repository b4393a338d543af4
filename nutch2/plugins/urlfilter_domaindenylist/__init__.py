"""urlfilter-domaindenylist: drop URLs whose domain suffix, domain or host is listed in
domaindenylist-urlfilter.txt (urlfilter.domaindenylist.file, or inline in urlfilter.domaindenylist.rules)."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("urlfilter-domaindenylist",
                {"url-filter": "nutch2.plugins.urlfilter_domaindenylist.filter:DomainDenylistURLFilter"},
                "drop URLs of the listed domain suffixes, domains and hosts")
