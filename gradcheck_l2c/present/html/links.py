"""Where the report's anchors and images live: a folder with one page per source file, or one document
(the notebook's inline report), where every id carries a prefix so that two reports in a notebook never clash."""
from __future__ import annotations

import base64
import html
from dataclasses import dataclass

from gradcheck_l2c.present.draw.page import Section
from gradcheck_l2c.present.html.marks import Entry, SourceFile


@dataclass(frozen=True)
class Links:
    """Builds ids and hrefs. ``one_document``: everything in one page, ids prefixed with ``prefix``."""

    files: dict[str, SourceFile]
    one_document: bool = False
    prefix: str = ""
    index_page: str = "index.html"

    def _page(self, path: str) -> str:
        return "" if self.one_document else self.files[path].page

    def _index(self) -> str:
        return "" if self.one_document else self.index_page

    def row_id(self, entry: Entry) -> str:
        """The id of a finding's row in the index."""
        return f"{self.prefix}{entry.anchor}"

    def row(self, entry: Entry) -> str:
        return f"{self._index()}#{self.row_id(entry)}"

    def line_id(self, source: SourceFile, line: int) -> str:
        """The id of a source line: ``L188`` on a file's own page."""
        return f"{self.prefix}s{source.number}-L{line}" if self.one_document else f"L{line}"

    def line(self, path: str, line: int) -> str:
        return f"{self._page(path)}#{self.line_id(self.files[path], line)}"

    def note_id(self, entry: Entry) -> str:
        """The id of a finding's note beside its line."""
        return f"{self.prefix}note-{entry.anchor}"

    def note(self, entry: Entry) -> str:
        return f"{self._page(entry.finding.file)}#{self.note_id(entry)}"

    def file_id(self, source: SourceFile) -> str:
        """The id of a source file's heading in the one document."""
        return f"{self.prefix}s{source.number}"

    def page(self, source: SourceFile) -> str:
        """Where a source file's listing starts."""
        return f"#{self.file_id(source)}" if self.one_document else source.page

    def graph(self, section: Section) -> str:
        """A graph's image as a link around a picture (an ``<img>``: an SVG shown so runs no script), or,
        when Graphviz drew nothing, its ``.dot`` source and the note saying why."""
        e = html.escape
        name = section.image.name
        note = f'<p class="note">{e(section.note)}</p>' if section.note else ""
        if section.image.suffix not in (".svg", ".png"):
            where = "" if self.one_document else f' <a href="{e(name)}">{e(name)}</a>'
            return f'<div class="graph">graph {section.number}:{where}{note}</div>'
        alt = f"autograd graph {section.number}"
        if self.one_document:
            mime = "image/svg+xml" if section.image.suffix == ".svg" else "image/png"
            data = base64.b64encode(section.image.read_bytes()).decode("ascii")
            return f'<div class="graph"><img src="data:{mime};base64,{data}" alt="{alt}">{note}</div>'
        return f'<a class="graph" href="{e(name)}"><img src="{e(name)}" alt="{alt}"></a>{note}'
