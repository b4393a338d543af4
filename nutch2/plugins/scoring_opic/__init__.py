"""scoring-opic: Nutch's OPIC scoring (On-line Page Importance Computation): each row keeps a score and a cash;
a fetched page shares its cash among its outlinks (db.score.link.internal/external), a row adds what its inlinks
passed on to both; generate sorts by score², the index boost is score^indexer.score.power."""

from nutch2.plugin import Plugin

PLUGIN = Plugin("scoring-opic", {"scoring-filter": "nutch2.plugins.scoring_opic.opic:OPICScoringFilter"},
                "OPIC scores and cash")
