"""Index writers (Nutch's IndexWriters): where the index job's documents go, from index-writers.xml.

    <writers>
      <writer id="indexer_solr_1" class="org.apache.nutch.indexwriter.solr.SolrIndexWriter">
        <parameters><param name="url" value="http://127.0.0.1:8983/solr/nutch"/></parameters>
        <mapping>
          <copy><field source="title" dest="title_txt"/></copy>
          <rename><field source="meta_description" dest="description"/></rename>
          <remove><field source="batchId"/></remove>
        </mapping>
      </writer>
    </writers>

A writer is used when its plugin (named by ``class``: Nutch's Java class or the plugin id) is active
(plugin.includes); several writers at once get every document, each through its own mapping, and every delete.
A copy's dest may list several fields ("title,search"); Nutch's parse-metatags field names metatag.<name> are read
as nutch2's meta_<name>. Without an index-writers file, every active index-writer plugin is one writer with its
default parameters.
"""

from __future__ import annotations

import hashlib
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from nutch2.config import Configuration
from nutch2.errors import ConfigError, NutchError
from nutch2.mapred import hangs, measures
from nutch2.marks import Mark
from nutch2.plugin import Plugins, descriptor, extension_class
from nutch2.plugin.descriptor import PluginError
from nutch2.plugin.extension import Extension, fix_hint


@dataclass
class WriterSpec:
    """One <writer> of index-writers.xml: its id, its parameters and its field mapping."""

    id: str
    params: dict[str, str] = field(default_factory=dict)
    copy: dict[str, list[str]] = field(default_factory=dict)  # source field -> fields it is copied to
    rename: dict[str, str] = field(default_factory=dict)
    remove: list[str] = field(default_factory=list)


class IndexWriter(Extension):
    """indexer-*: where documents go (Nutch's IndexWriter). The driver opens the writers and calls begin(); a task
    opens its writers, writes and deletes, and flushes when it ended well; the job's final step (on the driver)
    opens them again and commits, which makes the run's documents visible; a job that failed before its commit
    leaves nothing visible, and its rerun writes the same documents again. nutch2.index.files is the base of
    writers that write files."""

    point: ClassVar[str] = "index-writer"

    def open(self, spec: WriterSpec, task: int | None, run: str) -> None:
        """Start writing: ``task`` is the task's number (None on the driver, for commit), ``run`` names the job run
        (the same for a rerun of the same command, so a rerun replaces what an interrupted run wrote)."""
        self.spec = spec

    def write(self, doc: dict[str, Any]) -> None:
        raise NotImplementedError

    def delete(self, doc_id: str) -> None:
        raise NotImplementedError

    def check(self) -> None:
        """Raise (one line) when the writer cannot work now, e.g. its server is down: checked before a job."""

    def begin(self) -> None:
        """On the driver (opened with task None), before the run's tasks start: forget what an interrupted attempt
        of the same run wrote and did not commit (a writer that stages output, e.g. files)."""

    def flush(self) -> None:
        """Send what is buffered (a task's end)."""

    def commit(self) -> None:
        """Make what the run wrote visible (the job's final step, on the driver)."""

    def counts(self) -> dict[str, int]:
        """What the writer counted in a task (e.g. requests sent again), added to the job's counters at its end."""
        return {}

    def refused(self) -> list[str]:
        """Ids of the documents of a task the writer did not take (each said in a line and counted, e.g. one larger
        than a request may be): their rows are not marked for this writer, so a later index sends them again."""
        return []

    def describe(self) -> str:
        """One line for logs: which writer, where to (no credentials)."""
        return self.plugin_id

    def destination(self) -> str:
        """Where the documents go (a core's URL, a folder), once opened: rows keep a mark per destination, so a
        writer with another destination gets every document."""
        return self.spec.id


def read_index_writers(path: str) -> list[tuple[str, WriterSpec]]:
    """(writer class, spec) of each <writer> of an index-writers.xml file."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        raise ConfigError(f"{path}: cannot read it as Nutch's index-writers.xml ({e}); fix it or set "
                          "indexer.indexwriters.file") from None
    for el in root.iter():  # Nutch's file has xmlns="http://lucene.apache.org/nutch"
        if isinstance(el.tag, str):
            el.tag = el.tag.rpartition("}")[2]
    out: list[tuple[str, WriterSpec]] = []
    for w in root.iter("writer"):
        wid, cls = (w.get("id") or "").strip(), (w.get("class") or "").strip()
        if not wid or not cls:
            raise ConfigError(f"{path}: every <writer> needs an id and a class (e.g. id=\"indexer_solr_1\" "
                              "class=\"org.apache.nutch.indexwriter.solr.SolrIndexWriter\")")
        if any(spec.id == wid for _, spec in out):
            raise ConfigError(f"{path}: two <writer>s have the id {wid!r}; give each its own id")
        spec = WriterSpec(wid, {(p.get("name") or ""): (p.get("value") or "") for p in w.iter("param")})
        for f in w.findall("mapping/copy/field"):
            dests = [field_name(d) for d in (f.get("dest") or "").split(",") if d.strip()]
            spec.copy.setdefault(_source(path, wid, f, dests), []).extend(dests)
        for f in w.findall("mapping/rename/field"):
            dest = field_name(f.get("dest") or "")
            spec.rename[_source(path, wid, f, [dest] if dest else [])] = dest
        spec.remove += [_source(path, wid, f, None) for f in w.findall("mapping/remove/field")]
        out.append((cls, spec))
    return out


def _source(path: str, wid: str, f: ET.Element, dests: list[str] | None) -> str:
    """The source of a mapping <field>, which must name one (and a dest, for copy and rename)."""
    source = field_name(f.get("source") or "")
    if not source or dests == []:
        raise ConfigError(f"{path}: writer {wid}: a mapping <field> needs a source (and copy and rename a dest), "
                          "e.g. <field source=\"title\" dest=\"title_txt\"/>")
    return source


def field_name(name: str) -> str:
    """A field named in a mapping: Nutch's parse-metatags fields metatag.<name> are nutch2's meta_<name>."""
    name = name.strip()
    return "meta_" + name[len("metatag."):] if name.startswith("metatag.") and len(name) > 8 else name


def writer_mark(plugin_id: str, destination: str) -> str:
    """The mark a row carries (its updatedb batch) once the writer of this plugin and destination committed its
    document: `_idxmrk_@<hash>`, beside the INDEX mark every indexed row carries."""
    digest = hashlib.sha1(f"{plugin_id}|{destination}".encode()).hexdigest()[:12]
    return f"{Mark.INDEX.value}@{digest}"


def writer_marks(markers: dict[str, str]) -> list[str]:
    """The writer marks a row carries."""
    return [k for k in markers if k.startswith(f"{Mark.INDEX.value}@")]


@dataclass
class IndexWriters:
    """The writers a job uses: (plugin id, spec) pairs, resolved on the driver; a task opens its own instances.
    `marks`: each writer's mark (writer_mark), known once they were opened on the driver (check)."""

    writers: list[tuple[str, WriterSpec]]
    marks: list[str] = field(default_factory=list)

    @classmethod
    def from_conf(cls, conf: Configuration, overrides: dict[str, dict[str, str]] | None = None) -> IndexWriters:
        """The active writers; ``overrides`` sets parameters per plugin id (e.g. -solr sets indexer-solr's url)."""
        plugins = Plugins(conf)
        active = plugins.providing("index-writer")
        name = conf.get_str("indexer.indexwriters.file").strip()
        path = conf.resource(name) if name else None
        if path is not None and path.is_file():
            by_class = {}
            for pid in active:
                c = extension_class(pid, "index-writer")
                by_class.update({pid: pid, getattr(c, "nutch_class", "") or pid: pid, c.__name__: pid})
            writers = [(by_class[c], spec) for c, spec in read_index_writers(str(path)) if c in by_class]
        else:
            writers = [(pid, WriterSpec(pid)) for pid in active]
        for pid, spec in writers:
            spec.params.update((overrides or {}).get(pid, {}))
            if spec.params.get("outpath"):  # a folder of the driver's: tasks elsewhere (Spark) write the same one
                spec.params["outpath"] = str(Path(spec.params["outpath"]).expanduser().absolute())
        if not writers:
            raise ConfigError("no index writer is active: add one to plugin.includes (e.g. indexer-solr) and, with "
                              f"an index-writers file ({name}), a <writer> of its class")
        return cls(writers)

    def open(self, conf: Configuration, task: int | None, run: str) -> OpenWriters:
        plugins = Plugins(conf)
        opened = []
        for pid, spec in self.writers:
            writer = plugins.build_one("index-writer", pid)
            _call(writer, spec, "open", spec.id, spec, task, run)
            opened.append((writer, spec))
        return OpenWriters(opened)

    def begin(self, conf: Configuration, run: str) -> None:
        """Before a run's tasks: each writer forgets what an interrupted attempt of the run left uncommitted."""
        out = self.open(conf, None, run)
        try:
            out.begin()
        finally:
            out.close()

    def describe(self) -> str:
        return ", ".join(f"{spec.id} ({descriptor(pid).id})" for pid, spec in self.writers)

    def check(self, conf: Configuration) -> None:
        """Open every writer on the driver and check it can work now (a dead Solr fails here, before any work);
        learn each one's mark."""
        out = self.open(conf, None, "check")
        try:
            out.check()
            self.marks = [writer_mark(pid, w.destination()) for (pid, _), (w, _) in zip(self.writers, out.writers,
                                                                                       strict=True)]
        finally:
            out.close()


class OpenWriters:
    """A task's (or the driver's) open writers: each document goes to every writer through its mapping. A writer
    that raises anything but nutch2's own one-line errors is named (index writer, method, the fix), and one whose
    call does not return is named by nutch2/mapred/hangs.py with the document or writer it is on."""

    def __init__(self, writers: list[tuple[Any, WriterSpec]]) -> None:
        self.writers = writers
        self.sent: dict[str, int] = {}  # measures: documents and deletes handed to each writer (by its id)
        hangs.start()  # a writer's call that never returns is named (a dict store per call on its path)

    def write(self, doc: dict[str, Any]) -> None:
        for writer, spec in self.writers:
            _call(writer, spec, "write", str(doc.get("id", spec.id)), mapped(doc, spec))
            self._count("index_documents", spec)

    def delete(self, doc_id: str) -> None:
        for writer, spec in self.writers:
            _call(writer, spec, "delete", doc_id, doc_id)
            self._count("index_deletes", spec)

    def _count(self, metric: str, spec: WriterSpec) -> None:
        name = measures.count_name(metric, spec.id)
        self.sent[name] = self.sent.get(name, 0) + 1

    def _each(self, method: str) -> list[Any]:
        return [_call(writer, spec, method, spec.id) for writer, spec in self.writers]

    def check(self) -> None:
        self._each("check")

    def begin(self) -> None:
        self._each("begin")

    def flush(self) -> None:
        self._each("flush")

    def commit(self) -> None:
        self._each("commit")

    def counts(self) -> dict[str, int]:
        """The writers' counts, added up, and the documents and deletes sent to each (measures)."""
        out: dict[str, int] = dict(self.sent)
        for counted in self._each("counts"):
            for name, n in counted.items():
                out[name] = out.get(name, 0) + n
        return out

    def refused(self) -> list[list[str]]:
        """The ids each writer did not take, in the writers' order."""
        return self._each("refused")

    def close(self) -> None:
        self._each("close")

    def describe(self) -> str:
        return ", ".join(w.describe() for w, _ in self.writers)


def _call(writer: Any, spec: WriterSpec, method: str, target: str, *args: Any) -> Any:
    """writer.method(*args); `target` (the document's id, or the writer's) names where a stuck call is."""
    tid, outer = hangs.current()
    _calls[tid] = (_SITE, writer, target, method)  # for hangs: the call a stuck thread is in
    try:
        return getattr(writer, method)(*args)
    except NutchError:
        raise  # nutch2's writers say what failed, and the fix, in their own line
    except Exception as e:  # noqa: BLE001 - the user's plugin: named, with the fix, instead of a traceback
        name = getattr(writer, "plugin_id", "") or type(writer).__name__
        what = f"{method} is not implemented (an index writer implements write and delete)" \
            if isinstance(e, NotImplementedError) else f"{method} raised {type(e).__name__}{f': {e}' if str(e) else ''}"
        raise PluginError(f"index writer {spec.id} ({name}): {what}; {fix_hint(name)}") from e
    finally:
        hangs.leave(tid, outer)  # back to the call it was in (a site that called it), if any


_SITE = hangs.Site("index writer", fix_hint)
_calls = hangs.calls


def mapped(doc: dict[str, Any], spec: WriterSpec) -> dict[str, Any]:
    """The document as one writer gets it: fields copied, renamed, then removed (Nutch's mapping order). A copy or
    a rename into a field the document has adds its values after that field's (Nutch's NutchDocument.add)."""
    if not (spec.copy or spec.rename or spec.remove):
        return doc
    out = dict(doc)
    for source, dests in spec.copy.items():
        if source in out:
            for dest in dests:
                if dest != source:
                    out[dest] = _added(out.get(dest), out[source])
    for source, dest in spec.rename.items():
        if source in out and dest != source:
            out[dest] = _added(out.get(dest), out.pop(source))
    for source in spec.remove:
        out.pop(source, None)
    return out


def _added(have: Any, value: Any) -> Any:
    if have is None:
        return list(value) if isinstance(value, list) else value
    return (have if isinstance(have, list) else [have]) + (value if isinstance(value, list) else [value])
