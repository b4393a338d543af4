"""urlfilter-domain: keep only URLs whose domain suffix, domain or host is listed in domain-urlfilter.txt
(urlfilter.domain.file, or inline in urlfilter.domain.rules); an empty list keeps every URL."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("urlfilter-domain", {"url-filter": "nutch2.plugins.urlfilter_domain.filter:DomainURLFilter"},
                "keep URLs of the listed domain suffixes, domains and hosts")
