"""indexer-solr: the index writer."""

from __future__ import annotations

from typing import Any

from nutch2.index.solr import SolrClient, solr_url
from nutch2.index.writers import IndexWriter, WriterSpec


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
            self.solr.add(self.docs)
            self.docs = []

    def commit(self) -> None:
        self.flush()
        if self.commit_index:
            self.solr.commit()

    def describe(self) -> str:
        return f"{self.spec.id} (Solr at {self.solr.shown})"

    def destination(self) -> str:
        return self.url.rstrip("/")
