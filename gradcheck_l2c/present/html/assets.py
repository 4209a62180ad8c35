"""The report's style sheet and its one small script (sorting and filtering the index), inlined in each page
so the folder works from ``file://`` with no network."""
from __future__ import annotations

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em 2em; color: #222; }
a { color: #0645ad; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.5em; }
.summary { color: #444; }
.controls { margin: 0.8em 0; display: flex; gap: 1em; align-items: center; flex-wrap: wrap; }
table.findings { border-collapse: collapse; width: 100%; }
table.findings th, table.findings td { border-bottom: 1px solid #ddd; padding: 4px 8px; text-align: left;
  vertical-align: top; }
table.findings th { cursor: pointer; user-select: none; background: #f4f4f4; white-space: nowrap; }
table.files th { cursor: default; }
th[aria-sort=ascending]::after { content: " \\25B2"; } th[aria-sort=descending]::after { content: " \\25BC"; }
tr:target, .finding:target { outline: 3px solid #f0c000; }
.sev { font-weight: bold; } .sev.error { color: #b00; } .sev.warning { color: #a60; } .sev.info { color: #06c; }
code, pre { font-family: ui-monospace, monospace; font-size: 0.92em; }
table.source { border-collapse: collapse; width: 100%; }
table.source td { padding: 0 8px; vertical-align: top; }
td.n { text-align: right; color: #888; width: 4em; user-select: none; }
td.n a { color: inherit; text-decoration: none; }
td.code pre { margin: 0; white-space: pre-wrap; }
tr.line:target td { background: #fff8c4; }
tr.line.error td.code { background: #fde2e1; border-left: 4px solid #c00; }
tr.line.warning td.code { background: #fff1d6; border-left: 4px solid #e08a00; }
tr.line.info td.code { background: #e3f0ff; border-left: 4px solid #3a7bd5; }
tr.line.related td.code { background: #eef0f3; border-left: 4px dashed #667; }
tr.gap td { color: #999; }
.notes { display: flex; flex-wrap: wrap; gap: 1em; margin: 0.3em 0 0.8em 0; }
.finding, .related-note { border: 1px solid #ccc; border-radius: 4px; padding: 0.4em 0.8em; background: #fff;
  max-width: 60em; }
.finding.error { border-left: 5px solid #c00; } .finding.warning { border-left: 5px solid #e08a00; }
.finding.info { border-left: 5px solid #3a7bd5; }
.finding .fix { margin-top: 0.3em; } .finding .fix b { color: #070; }
.verdict { margin-top: 0.3em; } .verdict.verified b { color: #070; } .verdict.not-enough b { color: #b00; }
.verdict.not-checked b { color: #666; }
details.diff { margin-top: 0.3em; } details.diff summary { cursor: pointer; color: #444; }
details.diff pre { margin: 0.2em 0; padding: 0.3em 0.5em; background: #f7f7f7; overflow-x: auto; }
details.diff span { display: block; } details.diff .add { background: #e6ffec; }
details.diff .del { background: #ffebe9; }
details.diff .hunk { color: #6a737d; } details.diff .file { color: #444; font-weight: bold; }
.gradplots { display: flex; flex-wrap: wrap; gap: 1em; } figure.gradplot { margin: 0; }
figure.gradplot figcaption { font-size: 0.9em; color: #444; text-align: center; }
ul.legend { list-style: none; padding: 0; columns: 3 18em; } .swatch { display: inline-block; width: 1.2em;
  height: 0.6em; margin-right: 0.4em; } .flagged { color: #b00; font-weight: normal; }
.graph { display: block; margin-top: 0.4em; }
.graph img { max-width: 38em; max-height: 30em; border: 1px solid #ddd; background: #fff; }
.note { background: #fff3cd; padding: 0.3em 0.6em; border-left: 4px solid #e0a800; }
"""

#: Sorts the findings table by a clicked header (numbers as numbers) and filters its rows by the text box and
#: the kind and severity menus; nothing else runs. ``__PREFIX__`` becomes the ids' prefix (a JSON string).
SCRIPT = """
(function () {
  var p = __PREFIX__;
  var table = document.getElementById(p + "findings");
  if (!table) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var text = document.getElementById(p + "filter-text");
  var kind = document.getElementById(p + "filter-kind");
  var severity = document.getElementById(p + "filter-severity");
  var shown = document.getElementById(p + "shown");
  function value(row, column) {
    var cell = row.cells[column];
    return cell.getAttribute("data-value") || cell.textContent;
  }
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header, column) {
    header.addEventListener("click", function () {
      var ascending = header.getAttribute("aria-sort") !== "ascending";
      var numeric = header.getAttribute("data-type") === "number";
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (other) {
        other.removeAttribute("aria-sort");
      });
      header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      rows.sort(function (a, b) {
        var x = value(a, column), y = value(b, column);
        var order = numeric ? Number(x) - Number(y) : x.localeCompare(y, undefined, {numeric: true});
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
  function filter() {
    var words = text.value.toLowerCase();
    var count = 0;
    rows.forEach(function (row) {
      var keep = (!words || row.textContent.toLowerCase().indexOf(words) >= 0) &&
        (!kind.value || row.getAttribute("data-kind") === kind.value) &&
        (!severity.value || row.getAttribute("data-severity") === severity.value);
      row.hidden = !keep;
      count += keep ? 1 : 0;
    });
    shown.textContent = String(count);
  }
  [text, kind, severity].forEach(function (control) {
    control.addEventListener("input", filter);
    control.addEventListener("change", filter);
  });
  filter();
})();
"""
