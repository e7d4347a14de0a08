"""The inline stylesheet and script of the static HTML report (see :mod:`exam_harness.report.html`).

Kept apart so html.py holds markup logic only. The script is an enhancement: every table, chart and
drill-down is plain HTML that reads the same with scripts off.
"""

from __future__ import annotations

CSS = """
:root { --fg: #1d2330; --muted: #5b6475; --line: #d8dde6; --bg: #ffffff; --band: #f4f6fa;
        --accent: #225ea8; --warn-bg: #fff4d6; --warn-line: #e0a800; --bad: #c0392b; }
* { box-sizing: border-box; }
body { margin: 0; padding: 1.25rem 2rem 3rem; color: var(--fg); background: var(--bg);
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header h1 { margin: 0 0 .15rem; font-size: 1.6rem; }
.meta, .muted, .note { color: var(--muted); }
.note { font-size: .9em; margin: .4rem 0; }
nav { margin: .6rem 0 1rem; display: flex; gap: 1rem; flex-wrap: wrap; }
a { color: var(--accent); }
h2 { font-size: 1.2rem; margin: 1.8rem 0 .5rem; border-bottom: 1px solid var(--line); padding-bottom: .2rem; }
.banner { background: var(--warn-bg); border-left: 4px solid var(--warn-line); padding: .6rem .9rem;
          margin: .8rem 0; font-weight: 600; }
.verdict { border-left: 4px solid var(--accent); background: var(--band); padding: .6rem .9rem; margin: .8rem 0; }
.verdict.failed { border-left-color: var(--bad); }
.verdict strong { font-size: 1.05rem; }
.verdict ul { margin: .4rem 0 0; padding-left: 1.2rem; }
.verdict li.failed { color: var(--bad); }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; }
th, td { padding: .3rem .55rem; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
thead th { background: var(--band); font-weight: 600; white-space: nowrap; vertical-align: bottom; }
th.group { text-align: center; border-left: 1px solid var(--line); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.num small { color: var(--muted); }
tr.incomplete > * { background: var(--warn-bg); }
.flag { color: var(--bad); font-weight: 700; cursor: help; }
.tag { font-size: .75em; border: 1px solid var(--line); border-radius: 3px; padding: 0 .3em; color: var(--muted); }
th.sortable { cursor: pointer; user-select: none; }
th.sortable::after { content: " \\2195"; color: var(--muted); font-weight: 400; }
#heatmap-table { font-size: 12.5px; }
#heatmap-table th.run { max-width: 9rem; white-space: normal; overflow-wrap: anywhere; vertical-align: bottom; }
#heatmap-table td.cell { text-align: center; min-width: 3.4rem; font-variant-numeric: tabular-nums;
                         border: 1px solid #fff; }
#heatmap-table td.cell.inc { background-image: repeating-linear-gradient(45deg, rgba(0,0,0,.22) 0 2px,
                             transparent 2px 7px); font-weight: 700; }
#heatmap-table td.cell.none { background: var(--band); color: var(--muted); }
.legend { display: flex; align-items: center; gap: .5rem; margin: .4rem 0 .6rem; color: var(--muted); }
.legend .ramp { width: 14rem; height: .8rem; border: 1px solid var(--line); }
.controls { margin: .3rem 0 .6rem; }
.grade-grid { display: flex; flex-wrap: wrap; gap: 1rem; }
.grade-chart { border: 1px solid var(--line); border-radius: 6px; padding: .5rem .7rem; background: #fff; }
.grade-chart h3 { margin: 0 0 .3rem; font-size: .95rem; overflow-wrap: anywhere; max-width: 22rem; }
.grade-chart svg text { font: 10px system-ui, sans-serif; fill: var(--fg); }
details.run-drill { border: 1px solid var(--line); border-radius: 6px; margin: .5rem 0; padding: .3rem .8rem; }
details.run-drill > summary { cursor: pointer; font-weight: 600; padding: .2rem 0; }
details.run-drill[open] > summary { border-bottom: 1px solid var(--line); margin-bottom: .4rem; }
details.run-drill:target { box-shadow: 0 0 0 2px var(--accent); }
.drill td { font-size: 13px; }
.drill td.text { max-width: 28rem; }
.drill td.reason { max-width: 22rem; overflow-wrap: anywhere; }
.drill .passage-text { color: #555; font-size: 0.9em; }
.outcome { font-weight: 600; white-space: nowrap; }
.outcome.required-missed { color: var(--bad); }
.outcome.error { color: #8e44ad; }
.outcome.missed { color: #b36b00; }
details.passage { margin-top: .3rem; }
details.passage > summary { cursor: pointer; color: var(--accent); }
details.passage blockquote { margin: .3rem 0; padding: .3rem .6rem; border-left: 3px solid var(--line);
                             background: var(--band); white-space: pre-wrap; max-width: 40rem; }
dl.settings { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1.2rem; margin: 0; }
dl.settings dt { color: var(--muted); }
dl.settings dd { margin: 0; overflow-wrap: anywhere; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .92em; }
"""

# The report's only script; its sha256 goes into the page's Content-Security-Policy, so any other
# script (an injection that slipped past escaping, an inline event handler) is refused by the browser.
JS = """
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("exam-data").textContent);

  // a run link targets a closed <details>: open it so the jump lands on its content
  function openTarget() {
    var id;
    try { id = decodeURIComponent(location.hash.slice(1)); } catch (e) { return; }  // a mistyped %-escape
    var el = id ? document.getElementById(id) : null;
    if (el && el.tagName === "DETAILS") { el.open = true; }
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();

  function reorder(tbody, rows, key, desc) {
    rows.sort(function (a, b) {
      var x = key(a), y = key(b);
      if (x === y) { return a._i - b._i; }
      if (x === null) { return 1; }
      if (y === null) { return -1; }
      return desc ? y - x : x - y;
    });
    rows.forEach(function (r) { tbody.appendChild(r); });
  }

  var board = document.getElementById("leaderboard-table");
  var boardRows = Array.prototype.slice.call(board.tBodies[0].rows);
  boardRows.forEach(function (r, i) { r._i = i; });
  board.querySelectorAll("th[data-col]").forEach(function (th) {
    th.classList.add("sortable");
    th.tabIndex = 0;
    function sort() {
      var col = th.getAttribute("data-col");
      var desc = th.getAttribute("data-dir") !== "desc";
      th.setAttribute("data-dir", desc ? "desc" : "asc");
      reorder(board.tBodies[0], boardRows, function (r) {
        var v = r.querySelector('[data-col="' + col + '"]').getAttribute("data-v");
        return v === null || v === "" ? null : parseFloat(v);
      }, desc);
    }
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sort(); } });
  });

  var heat = document.getElementById("heatmap-table");
  var heatRows = Array.prototype.slice.call(heat.tBodies[0].rows);
  heatRows.forEach(function (r, i) { r._i = i; });
  var select = document.createElement("select");
  select.id = "heat-sort";
  function option(value, text) {
    var o = document.createElement("option");
    o.value = value;
    o.textContent = text;
    select.appendChild(o);
  }
  option("", "query id");
  option("mean", "mean EXAM-Cover over runs (lowest first)");
  data.runs.forEach(function (run, j) { option(String(j), run + " (lowest first)"); });
  select.addEventListener("change", function () {
    var how = select.value;
    reorder(heat.tBodies[0], heatRows, function (r) {
      var row = data.cover[r._i];
      if (how === "") { return r._i; }
      if (how !== "mean") { return row[+how]; }
      var vals = row.filter(function (v) { return v !== null; });
      return vals.length ? vals.reduce(function (s, v) { return s + v; }, 0) / vals.length : null;
    }, false);
  });
  var label = document.createElement("label");
  label.textContent = "Order queries by ";
  label.appendChild(select);
  document.getElementById("heat-controls").appendChild(label);
})();
"""
