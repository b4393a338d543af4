"""indexer-solr: the index writer."""

from __future__ import annotations

import logging
from typing import Any

from nutch2.index.solr import SolrClient, SolrQueryError, solr_url
from nutch2.index.writers import IndexWriter, WriterSpec

log = logging.getLogger(__name__)


class SolrIndexWriter(IndexWriter):
    nutch_class = "org.apache.nutch.indexwriter.solr.SolrIndexWriter"

    def open(self, spec: WriterSpec, task: int | None, run: str) -> None:
        super().open(spec, task, run)
        conf = self.conf
        self.url = solr_url(conf, spec.params.get("url") or None)
        self.batch_size = max(1, int(spec.params.get("commitSize") or conf.get_int("solr.commit.size")))
        self.commit_index = conf.get_bool("solr.commit.index")
        self.solr = SolrClient(self.url, float(spec.params.get("timeout") or conf.get_float("solr.timeout")),
                               conf.get_int("solr.retries"), conf.get_float("solr.backoff.seconds"))
        self.docs: list[dict[str, Any]] = []
        self.deletes: list[str] = []
        self._refused: list[str] = []  # ids of documents Solr refused alone (their rows stay unmarked)

    def check(self) -> None:
        self.solr.ping()

    def write(self, doc: dict[str, Any]) -> None:
        self.docs.append(doc)
        if len(self.docs) >= self.batch_size:
            self.flush()

    def delete(self, doc_id: str) -> None:
        self.deletes.append(doc_id)
        if len(self.deletes) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        if self.deletes:
            self.solr.delete_ids(self.deletes)
            self.deletes = []
        if self.docs:
            self._add(self.docs)
            self.docs = []

    def _add(self, docs: list[dict[str, Any]]) -> None:
        """Send the documents. A request Solr refuses (HTTP 400: a value its schema does not take) is sent again in
        halves down to the documents it refuses: those are left out, each said in one line and counted, and their
        rows stay unmarked for a later index to send again, so that one page Solr cannot take no longer stops
        every index of a crawl. A refusal of every document of a request, or of a field the schema lacks, is the
        schema and the documents not fitting (e.g. index.static naming an unknown field): the job fails in one
        line naming the fix."""
        try:
            self.solr.add(docs)
            return
        except SolrQueryError as e:
            if "unknown field" in e.reason:
                raise
            refused = self._isolate(docs, e)
            if len(refused) == len(docs) > 1:
                raise e from None
        for doc, error in refused:
            self._refused.append(str(doc["id"]))
            log.warning(f"{self.spec.id}: {doc.get('url') or doc['id']}: Solr at {self.solr.shown} refused the "
                        f"document ({error.reason}); it stays unindexed there (the others were sent): fix the "
                        "field in the core's schema or the indexing filters, then index again")

    def _isolate(self, docs: list[dict[str, Any]], error: SolrQueryError,
                 ) -> list[tuple[dict[str, Any], SolrQueryError]]:
        """The documents of a request Solr refused (with `error`) that it refuses alone, the others sent: by
        halves, so a few bad documents among many cost a few requests more."""
        if len(docs) == 1:
            return [(docs[0], error)]
        refused: list[tuple[dict[str, Any], SolrQueryError]] = []
        for half in (docs[:len(docs) // 2], docs[len(docs) // 2:]):
            try:
                self.solr.add(half)
            except SolrQueryError as e:
                refused += self._isolate(half, e)
        return refused

    def refused(self) -> list[str]:
        return list(self._refused)

    def counts(self) -> dict[str, int]:
        return {"solr_refused": len(self._refused)} if self._refused else {}

    def commit(self) -> None:
        self.flush()
        if self.commit_index:
            self.solr.commit()

    def describe(self) -> str:
        return f"{self.spec.id} (Solr at {self.solr.shown})"

    def destination(self) -> str:
        return self.url.rstrip("/")
