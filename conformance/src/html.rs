//! The conformance matrix as one self-contained web page (`tdb conformance --html FILE`).
//!
//! The page carries the whole report as JSON and renders it in the browser: the matrix of
//! producers (grouped by format version) × implementations, the live writers, and every
//! check that is not a plain pass with its diff, its known-failure reason and its one-line
//! repro. Filters by status, level, tag, producer, implementation and case narrow everything
//! at once; they live in the URL's fragment, so a filtered view can be linked. Nothing is
//! fetched: the file opens from disk, offline.
//!
//! The counting rules are the text report's (`Report::render_text`): a matrix cell is the
//! worst status of each (case, producer, implementation) over the case's reads, shown as
//! "passed/applicable" with the other statuses named; the totals line counts every check.
//! `conformance/tests/runner_html.rs` opens the page in headless Chromium and holds it to
//! that.

use crate::report::{Report, Status};

const STYLE: &str = r#"
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1d1d1f; }
h1 { font-size: 1.4em; margin: 0 0 .3em; }
h2 { font-size: 1.1em; margin: 1.4em 0 .4em; }
table { border-collapse: collapse; }
th, td { border: 1px solid #d0d0d5; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #f3f3f6; }
td.cell { cursor: pointer; white-space: nowrap; }
td.ok { background: #e3f6e3; } td.bad { background: #fbe0e0; } td.meh { background: #fdf3d8; }
td.none { color: #999; }
#filters { display: flex; flex-wrap: wrap; gap: .8em; align-items: end; margin: .8em 0; }
#filters label { display: flex; flex-direction: column; font-size: .85em; color: #555; }
#totals { font-weight: 600; margin: .6em 0; }
.status { font-weight: 600; font-size: .8em; padding: 0 .4em; border-radius: 3px; background: #eee; }
.status.fail, .status.error, .status.crash, .status.timeout, .status.unexpected-pass { background: #f5b5b5; }
.status.expected-failure { background: #f7e0a3; } .status.pass { background: #bfe8bf; }
pre { background: #f7f7f9; padding: .4em; margin: .3em 0; max-height: 18em; overflow: auto; }
code.repro { background: #eef; padding: 0 .3em; }
li.check { margin: .5em 0; list-style: none; }
.note { color: #555; }
"#;

const SCRIPT: &str = r#"
"use strict";
window.onerror = (msg) => { document.body.dataset.errors = (document.body.dataset.errors || "") + msg + "\n"; };
const R = JSON.parse(document.getElementById("report").textContent);
const ORDER = SEVERITY_ORDER;
const TOTAL_ORDER = TOTALS_ORDER;
const LABEL = { "expected-failure": "xfail", "unexpected-pass": "xpass" };
const UNEXPECTED = new Set(["fail", "error", "timeout", "crash", "unexpected-pass"]);
const worse = (a, b) => (ORDER.indexOf(a) >= ORDER.indexOf(b) ? a : b);
const caseOf = (r) => R.cases[r.case] || { level: "", features: [], tags: [] };
const tagsOf = (r) => { const c = caseOf(r); return [...new Set([...(c.features || []), ...(c.tags || [])])]; };
const el = (tag, attrs = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) { if (k === "text") e.textContent = v; else e.setAttribute(k, v); }
  for (const k of kids) e.append(k);
  return e;
};
const readers = () => {
  const present = new Set(R.results.filter((r) => r.role === "reader").map((r) => r.implementation));
  return R.implementations.map((i) => i.name).filter((n) => present.has(n));
};
const FILTERS = ["status", "level", "tag", "producer", "implementation", "q"];
function state() {
  const p = new URLSearchParams(location.hash.slice(1));
  const s = {};
  for (const f of FILTERS) s[f] = p.get(f) || "";
  return s;
}
function setState(s) {
  const p = new URLSearchParams();
  for (const f of FILTERS) if (s[f]) p.set(f, s[f]);
  const hash = p.toString();
  // Render now rather than on the hashchange event, which fires later: whoever changed a
  // filter sees its effect as soon as the change returns.
  if (location.hash.slice(1) !== hash) location.hash = hash;
  render();
}
function matches(r, s) {
  if (s.status === "unexpected" ? !UNEXPECTED.has(r.status) : s.status && r.status !== s.status) return false;
  if (s.level && caseOf(r).level !== s.level) return false;
  if (s.tag && !tagsOf(r).includes(s.tag)) return false;
  if (s.producer && r.producer !== s.producer) return false;
  if (s.implementation && r.implementation !== s.implementation) return false;
  if (s.q && !(r.case + (r.read ? "/" + r.read : "")).includes(s.q)) return false;
  return true;
}
function tally(statuses) {
  const counts = {};
  for (const st of statuses) counts[st] = (counts[st] || 0) + 1;
  const applicable = Object.entries(counts).filter(([st]) => st !== "not-applicable").reduce((n, [, c]) => n + c, 0);
  if (applicable === 0) return { text: statuses.length ? "n/a" : "—", cls: "none" };
  const passed = counts["pass"] || 0;
  const others = TOTAL_ORDER.filter((st) => st !== "pass" && st !== "not-applicable" && counts[st])
    .map((st) => counts[st] + " " + (LABEL[st] || st));
  const bad = others.length && TOTAL_ORDER.some((st) => UNEXPECTED.has(st) && counts[st]);
  return {
    text: passed + "/" + applicable + (others.length ? " (" + others.join(", ") + ")" : ""),
    cls: bad ? "bad" : passed === applicable ? "ok" : "meh",
  };
}
function select(name, label, options, value) {
  const s = el("select", { id: "filter-" + name, name });
  s.append(el("option", { value: "", text: "all" }));
  for (const [v, text] of options) { const o = el("option", { value: v, text }); if (v === value) o.selected = true; s.append(o); }
  s.addEventListener("change", () => { const st = state(); st[name] = s.value; setState(st); });
  return el("label", {}, label, s);
}
function renderFilters(s) {
  const box = document.getElementById("filters");
  box.replaceChildren();
  const statuses = [["unexpected", "unexpected (fails the run)"], ...TOTAL_ORDER.map((x) => [x, x])];
  const levels = [...new Set(Object.values(R.cases).map((c) => c.level))].sort().map((x) => [x, x]);
  const tags = [...new Set(Object.values(R.cases).flatMap((c) => [...(c.features || []), ...(c.tags || [])]))].sort().map((x) => [x, x]);
  const producers = R.producers.map((p) => [p.name, p.name + " (format " + p.format_version + ")"]);
  const impls = R.implementations.map((i) => [i.name, i.name]);
  box.append(select("status", "status", statuses, s.status), select("level", "level", levels, s.level),
    select("tag", "tag", tags, s.tag), select("producer", "producer", producers, s.producer),
    select("implementation", "implementation", impls, s.implementation));
  const q = el("input", { id: "filter-q", type: "search", placeholder: "case id contains…", value: s.q });
  q.addEventListener("change", () => { const st = state(); st.q = q.value; setState(st); });
  box.append(el("label", {}, "case", q));
  const reset = el("button", { id: "filter-reset", type: "button", text: "clear filters" });
  reset.addEventListener("click", () => setState({}));
  box.append(reset);
}
function renderMatrix(results) {
  const cells = new Map();
  for (const r of results.filter((r) => r.role === "reader")) {
    const key = r.case + "\u0000" + r.producer + "\u0000" + r.implementation;
    cells.set(key, cells.has(key) ? worse(cells.get(key), r.status) : r.status);
  }
  const names = readers();
  const table = el("table", { id: "matrix" });
  const head = el("tr", {}, el("th", { text: "format" }), el("th", { text: "producer" }));
  for (const n of names) head.append(el("th", { text: n }));
  table.append(el("thead", {}, head));
  const body = el("tbody");
  for (const p of R.producers) {
    const row = el("tr", { "data-producer": p.name }, el("td", { text: String(p.format_version) }), el("td", { text: p.name + (p.live ? " (live)" : "") }));
    for (const n of names) {
      const statuses = [];
      for (const [key, st] of cells) { const [, prod, imp] = key.split("\u0000"); if (prod === p.name && imp === n) statuses.push(st); }
      const t = tally(statuses);
      const td = el("td", { class: "cell " + t.cls, "data-implementation": n, text: t.text, title: "show these checks" });
      td.addEventListener("click", () => { const st = state(); st.producer = p.name; st.implementation = n; setState(st); });
      row.append(td);
    }
    body.append(row);
  }
  table.append(body);
  document.getElementById("matrix-box").replaceChildren(table);
  const writes = results.filter((r) => r.role === "writer");
  const wbox = document.getElementById("writers-box");
  wbox.replaceChildren();
  if (writes.length) {
    const wt = el("table", { id: "writers" }, el("thead", {}, el("tr", {}, el("th", { text: "producer" }), el("th", { text: "replays" }))));
    const wb = el("tbody");
    for (const p of R.producers.filter((p) => p.live)) {
      const t = tally(writes.filter((r) => r.producer === p.name).map((r) => r.status));
      wb.append(el("tr", {}, el("td", { text: p.name }), el("td", { class: "cell " + t.cls, text: t.text })));
    }
    wt.append(wb);
    wbox.append(el("h2", { text: "Live writers (case replays)" }), wt);
  }
}
function renderTotals(results) {
  const counts = {};
  for (const r of results) counts[r.status] = (counts[r.status] || 0) + 1;
  const parts = TOTAL_ORDER.filter((st) => counts[st]).map((st) => counts[st] + " " + st);
  const unexpected = results.filter((r) => UNEXPECTED.has(r.status)).length;
  const t = document.getElementById("totals");
  t.textContent = results.length + " checks: " + (parts.length ? parts.join(", ") : "none");
  t.dataset.checks = String(results.length);
  t.dataset.unexpected = String(unexpected);
}
function renderChecks(results, s) {
  // Passes and not-applicable checks are listed only when asked for by status.
  const shown = results.filter((r) => s.status || (r.status !== "pass" && r.status !== "not-applicable"));
  const LIMIT = 500;
  const list = el("ul", { id: "checks" });
  for (const r of shown.slice(0, LIMIT)) {
    const li = el("li", { class: "check", "data-status": r.status });
    li.append(el("span", { class: "status " + r.status, text: r.status.toUpperCase() }), " ",
      el("strong", { text: r.case + (r.read ? "/" + r.read : "") }),
      " — " + r.role + " " + r.implementation + " from " + r.producer);
    if (r.detail) li.append(el("pre", { class: "detail", text: r.detail }));
    if (r.known_failure) li.append(el("div", { class: "reason" }, "known failure: ", el("em", { text: r.known_failure })));
    const repro = el("code", { class: "repro", text: r.repro });
    const copy = el("button", { type: "button", text: "copy" });
    copy.addEventListener("click", () => navigator.clipboard && navigator.clipboard.writeText(r.repro));
    li.append(el("div", {}, "repro: ", repro, " ", copy));
    list.append(li);
  }
  const box = document.getElementById("checks-box");
  box.replaceChildren(el("h2", { text: "Checks (" + shown.length + (s.status ? "" : ", passes hidden") + ")" }), list);
  if (shown.length > LIMIT) box.append(el("p", { class: "note", text: (shown.length - LIMIT) + " more: narrow the filters" }));
  const stale = document.getElementById("stale-box");
  stale.replaceChildren();
  if (R.stale_known_failures.length) {
    stale.append(el("h2", { text: "Stale known failures" }));
    for (const x of R.stale_known_failures) stale.append(el("p", { text: "known_failures/" + x.implementation + ".toml: case " + x.entry.case + ": " + x.why }));
  }
}
let rendered = null;
function render() {
  rendered = location.hash.slice(1);
  const s = state();
  renderFilters(s);
  const results = R.results.filter((r) => matches(r, s));
  renderTotals(results);
  renderMatrix(results);
  renderChecks(results, s);
  const all = R.results.filter((r) => UNEXPECTED.has(r.status)).length + R.stale_known_failures.length;
  const verdict = document.getElementById("verdict");
  verdict.textContent = all === 0 ? "OK: no unexpected result" : "FAILED: " + all + " unexpected results";
  verdict.className = all === 0 ? "ok" : "bad";
}
function header() {
  const box = document.getElementById("implementations");
  for (const i of R.implementations) box.append(el("li", { text: i.name + " " + i.version + " [" + i.roles.join(", ") + "]" }));
  for (const n of R.notes) box.append(el("li", { class: "note", text: "note: " + n }));
}
// Back, forward and an edited address change the hash without setState.
window.addEventListener("hashchange", () => { if (location.hash.slice(1) !== rendered) render(); });
header();
render();
document.body.dataset.ready = "1";
"#;

impl Report {
    /// The report as one self-contained HTML page (see the module documentation).
    pub fn render_html(&self) -> String {
        // `<` escaped inside the JSON (`\u003c`, still valid JSON) so that no value can close
        // the script element that holds it.
        let data = self.to_json().replace('<', "\\u003c");
        let names = |statuses: &[Status]| {
            let quoted: Vec<String> = statuses.iter().map(|s| format!("{:?}", s.name())).collect();
            format!("[{}]", quoted.join(", "))
        };
        let mut severity = Status::ALL.to_vec();
        severity.sort();
        let script = SCRIPT
            .replace("SEVERITY_ORDER", &names(&severity))
            .replace("TOTALS_ORDER", &names(&Status::ALL));
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <title>TileDB conformance matrix</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
             <h1>TileDB conformance matrix</h1>\n<p id=\"verdict\"></p>\n\
             <ul id=\"implementations\"></ul>\n<div id=\"filters\"></div>\n<p id=\"totals\"></p>\n\
             <h2>Producers × readers (cases passed / applicable)</h2>\n<div id=\"matrix-box\"></div>\n\
             <div id=\"writers-box\"></div>\n<div id=\"checks-box\"></div>\n<div id=\"stale-box\"></div>\n\
             <script type=\"application/json\" id=\"report\">{data}</script>\n\
             <script>{script}</script>\n</body>\n</html>\n"
        )
    }
}
