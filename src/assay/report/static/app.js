// assay's viewer: runs, a run, a case and a comparison, from the REST API or (in the static
// report) from data embedded in the page.
//
// Every piece of data reaches the page as a text node or an attribute value set through the
// DOM (h() below): nothing is ever parsed as HTML, so agent and judge text shows exactly as
// written and cannot run. Links are only ever built here, from "#/" routes.
"use strict";
(function () {
  const STATIC = readEmbedded();
  const TOKEN_KEY = "assay-token";
  const PAGE = 50;
  const VERDICTS = ["error", "fail", "borderline", "skipped", "pass"];
  const app = document.getElementById("app");
  let renderCount = 0;

  // -- DOM --------------------------------------------------------------------------------

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    setAttrs(el, attrs);
    add(el, children);
    return el;
  }

  function setAttrs(el, attrs) {
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") el.setAttribute("class", value);
      else if (key === "on") for (const [ev, fn] of Object.entries(value)) el.addEventListener(ev, fn);
      else if (key === "href") el.setAttribute("href", safeHref(value));
      else if (key === "width%") el.style.width = Math.max(0, Math.min(100, Number(value) || 0)) + "%";
      else if (key.startsWith("on")) throw new Error("event attributes are set with on: {}");
      else el.setAttribute(key, value === true ? "" : String(value));
    }
  }

  function add(el, children) {
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.appendChild(child instanceof Node ? child : document.createTextNode(visible(child)));
    }
    return el;
  }

  // Characters that hide or reorder the text around them (controls, bidirectional overrides,
  // zero-width characters) are shown as escapes, as the terminal shows them, so an id with
  // one never reads as another: the very class of assay/_util/control_chars.py.
  const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;
  function visible(value) {
    return String(value).replace(CONTROL, (c) => {
      const code = c.charCodeAt(0);
      return code < 0x100 ? "\\x" + code.toString(16).padStart(2, "0") : "\\u" + code.toString(16).padStart(4, "0");
    });
  }

  const SVG = "http://www.w3.org/2000/svg";
  function s(tag, attrs, ...children) {
    const el = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value !== null && value !== undefined) el.setAttribute(key, String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.appendChild(child instanceof Node ? child : document.createTextNode(visible(child)));
    }
    return el;
  }

  function safeHref(value) {
    const text = String(value);
    return text.startsWith("#/") ? text : "#/runs";
  }

  // -- formatting -------------------------------------------------------------------------
  // Figures (rates, scores, latencies, costs) come from the API already shown, in "display"
  // fields made by assay.types.numbers, so the page and the terminal never disagree: figure()
  // reads one. Only counts and times are formatted here.

  const MISSING = "-";
  const figure = (display, key) => (display && display[key] !== undefined ? display[key] : MISSING);
  const fmt = {
    int: (v) => (v === null || v === undefined ? MISSING : Number(v).toLocaleString("en-US")),
    time: (t) => (t ? new Date(t * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC" : "—"),
  };

  function badge(text, kind) {
    return h("span", { class: "badge b-" + String(kind || text).replace(/[^a-z]/g, "") }, text);
  }

  function gateBadge(summary) {
    if (!summary) return badge("no summary", "none");
    return summary.passed ? badge("gates passed", "passed") : badge("gates failed", "failed");
  }

  function pretty(value) {
    if (value === null || value === undefined) return "";
    if (typeof value === "string") {
      const trimmed = value.trim();
      if ((trimmed.startsWith("{") && trimmed.endsWith("}")) || (trimmed.startsWith("[") && trimmed.endsWith("]"))) {
        try { return JSON.stringify(JSON.parse(trimmed), null, 2); } catch (_) { /* plain text */ }
      }
      return value;
    }
    return JSON.stringify(value, null, 2);
  }

  function block(value, empty) {
    const text = pretty(value);
    return text === "" ? h("p", { class: "muted" }, empty || "(none)") : h("pre", {}, text);
  }

  function messageText(content) {
    if (content === null || content === undefined) return "";
    if (typeof content === "string") return content;
    if (Array.isArray(content)) return content.map((p) => (p && typeof p.text === "string" ? p.text : JSON.stringify(p))).join("");
    return JSON.stringify(content);
  }

  // -- routes -----------------------------------------------------------------------------

  function route(name, id, params) {
    let path = "#/" + name + (id !== undefined && id !== null ? "/" + encodeURIComponent(id) : "");
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) {
      if (Array.isArray(v)) v.forEach((x) => query.append(k, x));
      else if (v !== null && v !== undefined && v !== "") query.set(k, String(v));
    }
    const q = query.toString();
    return q ? path + "?" + q : path;
  }

  function parseHash() {
    const raw = location.hash.replace(/^#\/?/, "");
    const [path, query] = raw.split("?", 2);
    const parts = path.split("/").filter(Boolean).map((p) => {
      try { return decodeURIComponent(p); } catch (_) { return p; }
    });
    return { name: parts[0] || "", id: parts[1], params: new URLSearchParams(query || "") };
  }

  function go(hash) {
    if (location.hash === hash) render(); else location.hash = hash;
  }

  // -- data -------------------------------------------------------------------------------

  function readEmbedded() {
    const el = document.getElementById("assay-data");
    return el ? JSON.parse(el.textContent) : null;
  }

  class Failure extends Error {
    constructor(status, detail) { super(detail); this.status = status; }
  }

  async function api(path, params, method, body) {
    if (STATIC) return staticApi(path, params || {});
    const url = new URL(path, location.origin);
    for (const [k, v] of Object.entries(params || {})) {
      if (Array.isArray(v)) v.forEach((x) => url.searchParams.append(k, x));
      else if (v !== null && v !== undefined && v !== "") url.searchParams.set(k, String(v));
    }
    const headers = { Accept: "application/json" };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = "Bearer " + token;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(url, { method: method || "GET", headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: "omit" });
    if (response.status === 204) return null;
    let data = null;
    try { data = await response.json(); } catch (_) { data = { detail: response.statusText }; }
    if (!response.ok) throw new Failure(response.status, (data && data.detail) || "request failed");
    return data;
  }

  function staticApi(path, params) {
    const run = STATIC.run;
    const base = "/runs/" + run.id;
    if (path === "/runs") {
      return { items: [Object.assign({}, run, { config: undefined })], total: 1, limit: PAGE, offset: 0 };
    }
    if (path === base) return run;
    if (path === base + "/histograms") return STATIC.histograms;
    if (path === base + "/cases") return staticCases(params);
    if (path === "/runs/compare" && STATIC.comparison) return staticComparison(params);
    if (path === "/runs/compare/case" && STATIC.sides) {
      const found = STATIC.sides[params.case_id];
      if (!found) throw new Failure(404, "this report shows side by side only its first regressions and errors");
      return found;
    }
    if (path === base + "/case") {
      const key = params.case_id + "#" + (params.repeat || 0);
      const found = STATIC.details[key];
      if (!found) throw new Failure(404, "this report does not include the details of " + key);
      return found;
    }
    throw new Failure(404, "not available in a static report");
  }

  // Text as the server's searches fold it (store/search.fold: NFKC, then Unicode's case
  // folding): JavaScript lower-cases, and the characters whose folding is not their lower
  // case come with the report (STATIC.fold, made by the server from the same folding).
  function fold(text) {
    const table = STATIC.fold || {};
    let out = "";
    for (const c of String(text).normalize("NFKC")) out += Object.hasOwn(table, c) ? table[c] : c.toLowerCase();
    return out.normalize("NFKC");
  }

  // The embedded comparison, its rows kept in the order the server gave them (regressions
  // first), filtered and paged as the server would.
  function staticComparison(params) {
    const cmp = STATIC.comparison;
    const statuses = [].concat(params.case_status || []);
    const q = fold(params.case_q || "");
    const keep = cmp.case_rows.map((r, i) => i).filter((i) => (!statuses.length || statuses.includes(cmp.case_rows[i].status)) &&
      (!q || fold(cmp.case_rows[i].case_id).includes(q)));
    const offset = Number(params.case_offset || 0), limit = Number(params.case_limit || 100);
    const page = keep.slice(offset, offset + limit);
    return Object.assign({}, cmp, { case_rows: page.map((i) => cmp.case_rows[i]), test_case_comparisons: page.map((i) => cmp.test_case_comparisons[i]),
      case_total: keep.length, case_offset: offset, case_limit: limit, cases_truncated: offset + page.length < keep.length });
  }

  function staticCases(params) {
    let rows = STATIC.cases.slice();
    const verdicts = [].concat(params.verdict || []);
    if (verdicts.length) rows = rows.filter((r) => verdicts.includes(r.verdict));
    if (params.evaluator) {
      rows = rows.filter((r) => {
        const cell = r.scores[params.evaluator];
        if (!cell) return false;
        const state = params.evaluator_state;
        if (!state) return true;
        if (state === "passed") return cell.state === "value" && cell.passed === true;
        if (state === "failed") return cell.state === "value" && cell.passed === false;
        return cell.state === state;
      });
    }
    if (params.q) {
      const q = fold(params.q);
      rows = rows.filter((r) => [r.case_id, r.input_preview, r.output_preview, r.target_error || ""].some((t) => fold(t).includes(q)));
    }
    const sort = params.sort || "problems";
    const value = (r) => (params.evaluator && r.scores[params.evaluator] ? r.scores[params.evaluator].value : r.score);
    const byId = (a, b) => (a.case_id < b.case_id ? -1 : a.case_id > b.case_id ? 1 : a.repeat - b.repeat);
    const nullsLast = (x, y, dir) => (x === null && y === null ? 0 : x === null ? 1 : y === null ? -1 : dir * (x - y));
    const comparators = {
      problems: (a, b) => VERDICTS.indexOf(a.verdict) - VERDICTS.indexOf(b.verdict) || nullsLast(a.score, b.score, 1) || byId(a, b),
      score: (a, b) => nullsLast(value(a), value(b), 1) || byId(a, b),
      "-score": (a, b) => nullsLast(value(a), value(b), -1) || byId(a, b),
      case: byId,
      finished: (a, b) => (a.finished_at || 0) - (b.finished_at || 0) || byId(a, b),
      "-finished": (a, b) => (b.finished_at || 0) - (a.finished_at || 0) || byId(a, b),
    };
    rows.sort(comparators[sort] || comparators.problems);
    const offset = Number(params.offset || 0);
    const limit = Number(params.limit || PAGE);
    return { items: rows.slice(offset, offset + limit), total: rows.length, limit, offset };
  }

  // -- text diffs ---------------------------------------------------------------------------
  // The server sends the line diff of two texts (report/text_diff.py, with its cut); within
  // each changed block the page marks the words that differ (jsdiff, static/vendor/), so a
  // changed number shows as itself rather than as two whole lines. The work is bounded, so a
  // megabyte of output never freezes the page: a block of more than WORD_DIFF_CHARS, one
  // jsdiff cannot settle in WORD_DIFF_MS, and every block once the diff has spent
  // WORD_DIFF_BUDGET_MS stay line diffs, and the page says so.

  const WORD_DIFF_CHARS = 10000;
  const WORD_DIFF_MS = 40;
  const WORD_DIFF_BUDGET_MS = 200;
  const CHAR_DIFF_CHARS = 40;

  function diffView(lines, id) {
    const pre = h("pre", { class: "diff", id });
    const deadline = performance.now() + WORD_DIFF_BUDGET_MS;
    let plain = 0;
    for (let i = 0; i < lines.length;) {
      if (lines[i].op === "same") { pre.appendChild(diffLine("same", [[lines[i].text, false]])); i++; continue; }
      const removed = [], added = [];
      while (i < lines.length && lines[i].op === "removed") removed.push(lines[i++].text);
      while (i < lines.length && lines[i].op === "added") added.push(lines[i++].text);
      const marks = blockMarks(removed, added, deadline);
      plain += marks.plain;
      removed.forEach((t, k) => pre.appendChild(diffLine("removed", marks.removed[k] || [[t, false]])));
      added.forEach((t, k) => pre.appendChild(diffLine("added", marks.added[k] || [[t, false]])));
    }
    pre.setAttribute("data-word-diff", plain ? "partial" : "complete");
    return h("div", {}, pre, plain ? h("p", { class: "muted small word-diff-note" },
      `Changed words are marked where the change is small enough to mark quickly; ${fmt.int(plain)} changed line${plain === 1 ? " is" : "s are"} shown whole.`) : null);
  }

  function diffLine(op, pieces) {
    const mark = op === "removed" ? "del" : "ins";
    return h("span", { class: "d-" + op }, op === "added" ? "+ " : op === "removed" ? "− " : "  ",
      pieces.map(([text, changed]) => (changed ? h(mark, {}, text) : text)), "\n");
  }

  // The words (for a short text of one word, a number or a name, the characters) that differ
  // between a block of removed lines and the added lines that replaced it: per line, its
  // pieces [text, changed] (none changed when the lines have nothing in common), or nothing
  // where they could not be marked cheaply before ``deadline``; ``plain`` counts those.
  // A block of as many lines on each side is compared line by line.
  function blockMarks(removed, added, deadline) {
    const none = { removed: [], added: [], plain: removed.length && added.length ? removed.length + added.length : 0 };
    if (!none.plain) return none;
    if (removed.length === added.length && removed.length > 1) {
      const marks = { removed: [], added: [], plain: 0 };
      removed.forEach((r, k) => {
        const pair = performance.now() < deadline ? lineMarks([r], [added[k]]) : null;
        if (pair) { marks.removed[k] = pair.removed[0]; marks.added[k] = pair.added[0]; } else marks.plain += 2;
      });
      return marks;
    }
    const block = performance.now() < deadline ? lineMarks(removed, added) : null;
    return block ? Object.assign(block, { plain: 0 }) : none;
  }

  function lineMarks(removed, added) {
    const before = removed.join("\n"), after = added.join("\n");
    if (!window.Diff || before.length + after.length > WORD_DIFF_CHARS) return null;
    const short = before.length <= CHAR_DIFF_CHARS && after.length <= CHAR_DIFF_CHARS && !/\s/.test(before + after);
    const changes = (short ? window.Diff.diffChars : window.Diff.diffWordsWithSpace)(before, after, { timeout: WORD_DIFF_MS });
    if (!changes) return null;
    if (!changes.some((c) => !c.added && !c.removed && c.value.trim())) {  // all changed: the line's colour says it
      return { removed: removed.map((t) => [[t, false]]), added: added.map((t) => [[t, false]]) };
    }
    const old = sideLines(changes.filter((c) => !c.added)), now = sideLines(changes.filter((c) => !c.removed));
    return old.length === removed.length && now.length === added.length ? { removed: old, added: now } : null;
  }

  function sideLines(changes) {
    const lines = [[]];
    for (const c of changes) {
      c.value.split("\n").forEach((piece, k) => {
        if (k) lines.push([]);
        if (piece) lines[lines.length - 1].push([piece, Boolean(c.added || c.removed)]);
      });
    }
    return lines;
  }

  // -- charts (SVG) -------------------------------------------------------------------------

  function coloured(color) {
    return s("svg", { width: 10, height: 10, "aria-hidden": "true", class: "swatch" }, s("rect", { width: 10, height: 10, rx: 2, fill: color }));
  }

  // A score histogram; with ``link``, each bin is a link to the cases it counts.
  function histogram(bins, labels, color, label, link, selected) {
    const W = 220, H = 70, B = 14;
    const max = Math.max(1, ...bins);
    const w = W / bins.length;
    const svg = s("svg", { class: "chart hist", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": label });
    bins.forEach((count, i) => {
      const bh = ((H - B - 4) * count) / max;
      const title = `${labels[i]}: ${count}`;
      const bar = s("g", { class: "bin" + (String(selected) === String(i) ? " selected" : ""), "data-bin": i },
        s("rect", { x: i * w, y: 0, width: w, height: H - B, class: "bin-hit" }),
        s("rect", { x: i * w + 1, y: H - B - bh, width: w - 2, height: Math.max(bh, count ? 1 : 0), fill: color, rx: 1 }),
        s("title", {}, title + (link && count ? " (click to list them)" : "")));
      if (link && count) {
        bar.setAttribute("tabindex", "0");
        bar.setAttribute("role", "link");
        bar.addEventListener("click", () => go(link(i)));
        bar.addEventListener("keydown", (e) => { if (e.key === "Enter") go(link(i)); });
      }
      svg.appendChild(bar);
    });
    svg.appendChild(s("text", { x: 0, y: H - 2 }, "0"));
    svg.appendChild(s("text", { x: W, y: H - 2, "text-anchor": "end" }, "1"));
    return svg;
  }

  function meter(value) {
    return h("span", { class: "meter" }, h("span", { "width%": value === null || value === undefined ? 0 : 100 * value }));
  }

  // -- pages ------------------------------------------------------------------------------

  async function render() {
    const mine = ++renderCount;
    const hash = location.hash;
    const { name, id, params } = parseHash();
    let view;
    try {
      if (name === "run" && id) view = await runPage(id, params);
      else if (name === "case" && id) view = await casePage(id, params);
      else if (name === "compare" || (STATIC && STATIC.comparison && !name)) view = await comparePage(params);
      else if (STATIC) view = await runPage(STATIC.run.id, params);
      else view = await runsPage(params);
    } catch (err) {
      if (err instanceof Failure && err.status === 401) view = tokenPage();
      else view = h("div", { class: "panel error", role: "alert" }, h("strong", {}, "Could not load this page. "), String(err.message || err));
    }
    if (mine !== renderCount) return;
    app.replaceChildren(view);
    app.setAttribute("data-rendered", hash);  // what the page shows now (for tests and tools)
    document.title = "assay · " + (name || "runs");
  }

  function tokenPage() {
    const input = h("input", { type: "password", placeholder: "ASSAY_SERVER_TOKEN", autocomplete: "off", id: "token" });
    const save = () => { sessionStorage.setItem(TOKEN_KEY, input.value.trim()); render(); };
    input.addEventListener("keydown", (e) => { if (e.key === "Enter") save(); });
    return h("div", { class: "panel tokenbox" }, h("h2", {}, "This server needs a token"),
      h("p", { class: "muted" }, "Paste the server's ASSAY_SERVER_TOKEN. It is kept for this tab only."),
      input, h("button", { on: { click: save } }, "Continue"));
  }

  const SUITE_COLORS = ["#3451b2", "#1f8a4c", "#b7791f", "#c9302c", "#7e3fb8", "#0e7490", "#be185d", "#4d7c0f"];
  const SUITE_COLORS_DARK = ["#8ea6ff", "#5fd08f", "#e3b341", "#ff7b72", "#c79bf2", "#4fc3d9", "#f17fb5", "#a3d65c"];

  // Where a suite file is, in a few words: its last two path parts.
  function shortPath(path) {
    if (!path) return "";
    const parts = String(path).split(/[\\/]/).filter(Boolean);
    return parts.slice(-2).join("/");
  }

  function gitText(git) {
    if (!git) return "";
    return (git.branch || "detached") + " @ " + String(git.commit).slice(0, 7) + (git.dirty ? " (uncommitted changes)" : "");
  }

  function tagChips(tags, link) {
    return (tags || []).map((t) => h("a", { class: "tag", href: link ? link(t) : route("runs", null, { tag: t }), title: "runs tagged " + t }, t));
  }

  function onboarding() {
    return h("div", { class: "panel onboarding", id: "onboarding" }, h("h2", {}, "No runs yet"),
      h("p", {}, "Runs show up here as soon as they start. Make your first one in a minute:"),
      h("ol", {},
        h("li", {}, "Write a suite (or let assay write one): ", h("code", {}, "assay init my-suite")),
        h("li", {}, "Run it: ", h("code", {}, "assay run my-suite/EVAL.yaml --name first-try")),
        h("li", {}, "Come back here: every case, its scores and why it failed."),
        h("li", {}, "Change the agent, run again, and compare the two runs on the Compare page.")),
      h("p", { class: "muted" }, "The server reads the store at ", h("code", {}, "$ASSAY_STORE_URL"), " (else .assay/runs.db). ",
        "The API is described at ", h("a", { href: "#/api" }, "the API reference"), "."));
  }

  async function runsPage(params) {
    const filters = { q: params.get("q"), suite: params.get("suite"), tag: params.get("tag"), branch: params.get("branch"),
      target: params.get("target"), status: params.get("status"), since: params.get("since") };
    const offset = Number(params.get("offset") || 0);
    const limit = Number(params.get("limit") || PAGE);
    const page = await api("/runs", Object.assign({ limit, offset }, filters));
    const filtered = Object.values(filters).some(Boolean);
    if (!page.total && !filtered) return h("div", {}, h("h1", {}, "Runs"), onboarding());
    const selected = new Set();
    const compareButton = h("button", { disabled: true, id: "compare-selected" }, "Compare selected");
    compareButton.addEventListener("click", () => {
      const runs = page.items.filter((r) => selected.has(r.id)).sort((a, b) => a.created_at - b.created_at);
      if (runs.length === 2) go(route("compare", null, { baseline: runs[0].id, candidate: runs[1].id }));
    });
    const apply = (changes) => go(route("runs", null, Object.assign({}, filters, { limit }, changes, { offset: 0 })));
    const text = (key, label, type) => {
      const input = h("input", { type: type || "search", name: key, value: filters[key] || "", placeholder: label, "aria-label": label });
      input.addEventListener("change", () => apply({ [key]: input.value.trim() }));
      return input;
    };
    const status = h("select", { name: "status", "aria-label": "status" },
      ["", "completed", "running", "waiting", "interrupted", "failed"].map((v) => h("option", { value: v, selected: (filters.status || "") === v }, v || "any status")));
    status.addEventListener("change", () => apply({ status: status.value }));
    const since = h("input", { type: "date", name: "since", value: filters.since || "", "aria-label": "since" });
    since.addEventListener("change", () => apply({ since: since.value }));

    const rows = page.items.map((r) => {
      const box = h("input", { type: "checkbox", "aria-label": "select " + r.id });
      box.addEventListener("change", () => {
        if (box.checked) selected.add(r.id); else selected.delete(r.id);
        compareButton.disabled = selected.size !== 2;
      });
      const sm = r.summary;
      return h("tr", { "data-run": r.id, tabindex: "-1", "data-href": route("run", r.id) },
        h("td", {}, box),
        h("td", { class: "run-cell" }, h("a", { href: route("run", r.id), class: "run-name" }, r.name || r.id), r.name ? h("div", { class: "muted mono" }, r.id) : null,
          r.is_baseline ? [" ", badge("baseline")] : null, h("div", { class: "tags" }, tagChips(r.tags, (t) => route("runs", null, Object.assign({}, filters, { tag: t, offset: 0 }))))),
        h("td", { class: "suite-cell" }, h("a", { href: route("runs", null, Object.assign({}, filters, { suite: r.suite, offset: 0 })), title: r.suite_path || r.suite }, r.suite),
          r.suite_path ? h("div", { class: "muted mono" }, shortPath(r.suite_path)) : null, r.description ? h("div", { class: "muted desc" }, r.description) : null),
        h("td", { class: "git-cell" }, r.git ? h("a", { href: route("runs", null, Object.assign({}, filters, { branch: r.git.branch, offset: 0 })), class: "mono", title: r.git.commit }, gitText(r.git)) : h("span", { class: "muted" }, "—"),
          r.agent_version ? h("div", { class: "muted" }, "agent " + r.agent_version) : null),
        h("td", {}, r.unreadable ? h("span", { title: r.unreadable }, badge("unreadable", "error")) : badge(r.status)), h("td", {}, r.status === "completed" ? gateBadge(sm) : badge("—", "none")),
        h("td", { class: "num" }, r.cases),
        h("td", { class: "num" }, meter(r.pass_rate), figure(r.display, "pass_rate")),
        h("td", { class: "num" }, figure(r.display, "mean_score")),
        h("td", { class: "num" }, fmt.time(r.created_at)));
    });
    return h("div", {},
      h("h1", {}, "Runs"),
      h("div", { class: "toolbar" }, text("q", "search name, id, notes"), text("suite", "suite"), text("tag", "tag"), text("branch", "branch"), text("target", "target"),
        status, h("label", {}, "since", since), compareButton),
      runsChart(page.items),
      h("div", { class: "table-wrap" }, h("table", { id: "runs", class: "nav" },
        h("thead", {}, h("tr", {}, h("th", {}, ""), h("th", {}, "Run"), h("th", {}, "Suite"), h("th", {}, "Made from"), h("th", {}, "Status"), h("th", {}, "Gates"),
          h("th", { class: "num" }, "Cases"), h("th", { class: "num" }, "Pass rate"), h("th", { class: "num" }, "Mean score"), h("th", { class: "num" }, "Created"))),
        h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 10, class: "muted" }, "No runs match these filters."))))),
      h("div", { class: "toolbar pager-bar" }, pager(page, (o) => route("runs", null, Object.assign({}, filters, { limit, offset: o }))),
        pageSize(limit, (n) => apply({ limit: n }))));
  }

  // The pass rate of the listed runs over time, one line per suite (uPlot, static/vendor/):
  // hovering shows the nearest run's name, date and pass rate, a click (or Enter, the arrow
  // keys moving between runs) opens it, dragging zooms into a stretch of time.
  function runsChart(items) {
    const suites = Array.from(new Set(items.map((r) => r.suite))).slice(0, SUITE_COLORS.length);
    // a run whose start cannot be read (created_at null, named by its row) has no place in time
    const runs = items.filter((r) => r.pass_rate !== null && r.pass_rate !== undefined && r.created_at !== null && suites.includes(r.suite)).sort((a, b) => a.created_at - b.created_at);
    if (!runs.length || !window.uPlot) return null;
    const colors = suiteColors();
    const tip = h("div", { class: "chart-tip", role: "status", hidden: true });
    const box = h("div", { class: "trend", id: "runs-chart", tabindex: "0", role: "group", "aria-label": "pass rate over time, one line per suite; arrow keys pick a run, Enter opens it" }, tip);
    let plot = null;
    const opened = (idx) => { if (idx !== null && idx !== undefined && runs[idx]) go(route("run", runs[idx].id)); };
    const sizer = new ResizeObserver(() => {
      if (!box.isConnected) { sizer.disconnect(); if (plot) plot.destroy(); return; }  // the page moved on
      const width = box.clientWidth;
      if (!width) return;
      if (plot) { plot.setSize({ width, height: 220 }); return; }
      plot = trendPlot(runs, suites, colors, width, tip);
      box.insertBefore(plot.root, tip);
      box.uplot = plot;  // for tests and tools: the chart, and the run of each x value
      box.uplotRuns = runs;
      let down = null;
      plot.over.addEventListener("mousedown", (e) => { down = e.clientX; });
      plot.over.addEventListener("click", (e) => { if (down === null || Math.abs(e.clientX - down) < 4) opened(plot.cursor.idx); });
    });
    sizer.observe(box);
    box.addEventListener("keydown", (e) => {
      if (!plot) return;
      const now = plot.cursor.idx === null || plot.cursor.idx === undefined ? -1 : plot.cursor.idx;
      const next = e.key === "ArrowRight" ? Math.min(runs.length - 1, now + 1) : e.key === "ArrowLeft" ? Math.max(0, now < 0 ? runs.length - 1 : now - 1) : null;
      if (e.key !== "Enter" && next === null) return;
      e.preventDefault();
      e.stopPropagation();  // the page's own keys (j/k, Enter on a table row) are not the chart's
      if (e.key === "Enter") { opened(now); return; }
      plot.setCursor({ left: plot.valToPos(runs[next].created_at, "x"), top: plot.valToPos(runs[next].pass_rate, "y") });
    });
    return h("div", { class: "panel" }, h("h2", {}, "Pass rate over time, by suite"), box,
      h("div", { class: "legend" }, suites.map((suite, k) => h("a", { href: route("runs", null, { suite }), "data-suite": suite }, coloured(colors[k]), suite))),
      h("p", { class: "muted small" }, "Point at a run to read it, click to open it; drag to zoom in, double-click to zoom out."));
  }

  // A time axis tick in UTC, as the page writes times: a day at midnight, else the hour.
  // A tick's label: the clock to the minute, or to the second when ticks are under a minute
  // apart (runs made in one sitting would otherwise read "10:59, 10:59, 11:00, 11:00").
  function utcTick(ts, i, step) {
    const iso = new Date(ts * 1000).toISOString();
    const clock = step && step < 60 ? iso.slice(11, 19) : iso.slice(11, 16);
    return iso.slice(11, 19) === "00:00:00" ? iso.slice(0, 10) : (i ? "" : iso.slice(0, 10) + " ") + clock;
  }

  // The suites' colours, brighter on a dark page.
  function suiteColors() {
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? SUITE_COLORS_DARK : SUITE_COLORS;
  }

  // The trend chart itself: one x value a run (so a hovered index is a run), each suite's
  // series holding its runs' pass rates and nothing between them.
  function trendPlot(runs, suites, colors, width, tip) {
    const css = getComputedStyle(document.documentElement);
    const ink = css.getPropertyValue("--muted").trim() || "#5f6b7a", grid = css.getPropertyValue("--grid").trim() || "#e1e5eb";
    const data = [runs.map((r) => r.created_at)].concat(suites.map((suite) => runs.map((r) => (r.suite === suite ? r.pass_rate : null))));
    const axis = { stroke: ink, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 }, font: "11px system-ui, sans-serif" };
    const show = (u) => {
      const idx = u.cursor.idx;
      const r = idx === null || idx === undefined ? null : runs[idx];
      tip.hidden = !r;
      if (!r) return;
      tip.replaceChildren(h("strong", {}, r.name || r.id), h("div", { class: "muted" }, r.suite + " · " + fmt.time(r.created_at)), h("div", {}, "pass rate " + figure(r.display, "pass_rate")));
      const x = u.valToPos(r.created_at, "x"), y = u.valToPos(r.pass_rate, "y");
      const base = tip.parentNode.getBoundingClientRect(), over = u.over.getBoundingClientRect();
      tip.style.left = Math.min(over.left - base.left + x + 12, Math.max(0, base.width - 250)) + "px";
      tip.style.top = Math.max(0, over.top - base.top + y - 10) + "px";
    };
    return new window.uPlot({
      width, height: 220, legend: { show: false },
      tzDate: (ts) => window.uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
      cursor: { points: { size: 11 }, drag: { x: true, y: false }, focus: { prox: 24 } },
      focus: { alpha: 0.35 },
      scales: { x: { time: true }, y: { range: [0, 1] } },
      axes: [Object.assign({}, axis, { values: (u, splits) => splits.map((v, i) => utcTick(v, i, splits.length > 1 ? splits[1] - splits[0] : 0)) }), Object.assign({}, axis, { size: 44, values: (u, splits) => splits.map((v) => Math.round(v * 100) + "%") })],
      series: [{}].concat(suites.map((suite, k) => ({ label: suite, stroke: colors[k], width: 2, spanGaps: true, points: { show: true, size: 7, fill: colors[k] } }))),
      hooks: { setCursor: [show] },
    }, data);
  }

  function pager(page, link) {
    const last = Math.min(page.offset + page.limit, page.total);
    return h("div", { class: "pager" },
      page.offset > 0 ? h("a", { href: link(Math.max(0, page.offset - page.limit)), rel: "prev" }, "‹ previous") : null,
      h("span", {}, page.total ? `${fmt.int(page.offset + 1)}–${fmt.int(last)} of ${fmt.int(page.total)}` : "none"),
      last < page.total ? h("a", { href: link(page.offset + page.limit), rel: "next" }, "next ›") : null);
  }

  const PAGE_SIZES = [25, 50, 100, 200, 500];

  function pageSize(current, change) {
    const select = h("select", { class: "page-size", "aria-label": "rows per page" },
      PAGE_SIZES.map((n) => h("option", { value: n, selected: n === current }, n + " a page")));
    select.addEventListener("change", () => change(Number(select.value)));
    return select;
  }

  // Downloads a file the server writes (CSV or JSON), with the token the API needs.
  async function download(path, params, filename) {
    const url = new URL(path, location.origin);
    for (const [k, v] of Object.entries(params || {})) {
      if (Array.isArray(v)) v.forEach((x) => url.searchParams.append(k, x));
      else if (v !== null && v !== undefined && v !== "") url.searchParams.set(k, String(v));
    }
    const headers = {};
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = "Bearer " + token;
    const response = await fetch(url, { headers, credentials: "omit" });
    if (!response.ok) throw new Failure(response.status, "the export failed (" + response.status + ")");
    const link = document.createElement("a");
    link.href = URL.createObjectURL(await response.blob());
    link.download = filename;
    document.body.appendChild(link);
    link.click();
    setTimeout(() => { URL.revokeObjectURL(link.href); link.remove(); }, 1000);
  }

  function exportButtons(path, params, basename) {
    if (STATIC) return null;
    const button = (format) => {
      const el = h("button", { class: "secondary small", "data-export": format }, format.toUpperCase());
      el.addEventListener("click", async () => {
        el.disabled = true;
        try { await download(path, Object.assign({}, params, { format }), basename + "." + format); } finally { el.disabled = false; }
      });
      return el;
    };
    return h("span", { class: "export" }, h("span", { class: "muted" }, "export "), button("csv"), " ", button("json"));
  }

  // A figure in words (a cost naming a part whose cost is unknown) is set smaller, whole.
  function card(label, value, sub, id) {
    const wordy = typeof value === "string" && value.length > 12;
    return h("div", { class: "card", id }, h("div", { class: "label" }, label), h("div", { class: wordy ? "value wordy" : "value" }, value), sub ? h("div", { class: "sub" }, sub) : null);
  }

  // A run's name, tags and notes, changed in place (PATCH /runs/{id}).
  function identityEditor(run) {
    if (STATIC) return run.notes ? h("p", { class: "notes", id: "run-notes" }, run.notes) : null;
    const name = h("input", { id: "edit-name", value: run.name || "", placeholder: "a name for this run", "aria-label": "run name", size: 28 });
    const tags = h("input", { id: "edit-tags", value: (run.tags || []).join(", "), placeholder: "tags, comma-separated", "aria-label": "tags", size: 28 });
    const notes = h("textarea", { id: "edit-notes", rows: 3, placeholder: "notes: what this run is for", "aria-label": "notes" });
    notes.value = run.notes || "";
    const status = h("span", { class: "muted", role: "status" });
    const save = h("button", { id: "edit-save" }, "Save");
    save.addEventListener("click", async () => {
      save.disabled = true;
      try {
        await api("/runs/" + encodeURIComponent(run.id), {}, "PATCH", { name: name.value.trim(), notes: notes.value,
          tags: tags.value.split(",").map((t) => t.trim()).filter(Boolean) });
        render();
      } catch (e) {
        status.textContent = e.message;
        save.disabled = false;
      }
    });
    return h("div", {}, run.notes ? h("p", { class: "notes", id: "run-notes" }, run.notes) : null,
      h("details", { class: "edit-identity" }, h("summary", {}, "Name, tags and notes"),
        h("div", { class: "toolbar" }, h("label", {}, "name", name), h("label", {}, "tags", tags)), h("div", {}, notes), h("div", { class: "toolbar" }, save, status)));
  }

  const SORTS = { case: ["case", "-case"], verdict: ["problems", "problems"], score: ["score", "-score"], latency: ["latency", "-latency"] };

  async function runPage(runId, params) {
    const state = {
      verdict: params.getAll("verdict"), evaluator: params.get("evaluator") || "",
      evaluator_state: params.get("evaluator_state") || "", q: params.get("q") || "",
      sort: params.get("sort") || "problems", offset: Number(params.get("offset") || 0),
      limit: Number(params.get("limit") || PAGE), score_bin: params.get("score_bin") || "",
    };
    const filter = { verdict: state.verdict, evaluator: state.evaluator, evaluator_state: state.evaluator ? state.evaluator_state : "",
      q: state.q, sort: state.sort, score_bin: state.score_bin };
    const [run, hist, page, agreement] = await Promise.all([
      api("/runs/" + encodeURIComponent(runId)),
      api("/runs/" + encodeURIComponent(runId) + "/histograms"),
      api("/runs/" + encodeURIComponent(runId) + "/cases", Object.assign({ offset: state.offset, limit: state.limit }, filter)),
      STATIC ? Promise.resolve([]) : api("/runs/" + encodeURIComponent(runId) + "/agreement").catch(() => []),
    ]);
    const sm = run.summary;
    const shownRun = run.display;
    const link = (changes) => route("run", run.id, Object.assign({}, state, { offset: 0 }, changes));
    const evaluators = sm ? Object.values(sm.evaluators) : [];

    const actions = [];
    if (!STATIC && run.status === "completed") {
      const toggle = h("button", { class: "secondary", id: "baseline-toggle" }, run.is_baseline ? "Unmark baseline" : "Mark as baseline");
      toggle.addEventListener("click", async () => {
        await api("/runs/" + encodeURIComponent(run.id), {}, "PATCH", { is_baseline: !run.is_baseline });
        render();
      });
      actions.push(toggle);
    }
    if (!STATIC && run.baseline_id && run.baseline_id !== run.id) {
      actions.push(h("a", { href: route("compare", null, { baseline: run.baseline_id, candidate: run.id }), id: "compare-baseline" }, "Compare with baseline " + run.baseline_id));
    }
    if (!STATIC) actions.push(h("a", { href: route("compare", null, { candidate: run.id }), id: "compare-with" }, "Compare with…"));

    const verdictCounts = VERDICTS.map((v) => `${(sm && sm.verdicts[v]) || 0} ${v}`).join(" · ");
    const summary = sm ? h("div", { class: "cards" },
      // What the verdicts count (cases, or executions with repeats) and the evaluator
      // scores' errors and not-applicable ones, in the words the API sends (one rule).
      card(shownRun && shownRun.counted === "executions" ? "Executions" : "Cases", fmt.int(sm.cases), shownRun ? shownRun.verdicts : verdictCounts),
      card("Pass rate", figure(shownRun, "pass_rate"), `${(sm.verdicts.pass || 0)} passed`),
      card("Mean score", figure(shownRun, "mean_score"), `${fmt.int(sm.scored)} scored`),
      card("Evaluator errors", fmt.int(sm.evaluator_errors), `of ${figure(shownRun, "evaluator_scores")} · ${fmt.int(sm.target_errors)} agent errors`, "errors-card"),
      card("Turn latency", figure(shownRun, "latency_p50"), "p95 " + figure(shownRun, "latency_p95")),
      card("Judge", fmt.int(sm.usage.calls) + " calls", `${figure(shownRun, "judge_tokens")} tokens · ${figure(shownRun, "judge_cost")}`, "judge-card"),
      // The run's cost names each part whose cost is unknown; tokens by who spent them.
      card("Total cost", figure(shownRun, "cost"), `agent ${figure(shownRun, "agent_tokens")} tokens · simulated user ${figure(shownRun, "simulator_tokens")} tokens`, "cost-card")) :
      run.status === "running" ? null : h("div", { class: "panel warn" }, run.unreadable ? "This run's stored row cannot be read: " + run.unreadable :
        "This run has no summary (it is " + run.status + (run.abandoned ? ": its process stopped" : "") + ").",
        run.resume_command ? [" Resume it with ", h("code", { id: "resume-command" }, run.resume_command)] : null);

    // A run with repeats: its cases over their repeats (pass^k, flaky), as the API says it.
    const repeatsShown = sm ? repeatsLine(shownRun) : null;
    const repeats = repeatsShown ? h("div", { class: "panel", id: "repeats" }, h("strong", {}, "Repeats"), " ", repeatsShown) : null;
    // What stopped a run's conversations (a simulated user's), counted as the API says it.
    const stopsShown = figure(shownRun, "stop_reasons");
    const stops = sm && stopsShown !== MISSING ? h("div", { class: "panel", id: "stop-reasons" }, h("strong", {}, "Conversations stopped"), " ", h("span", { class: "figure" }, stopsShown)) : null;

    const gates = sm && sm.gate_failures.length ? h("div", { class: "panel error", id: "gate-failures" }, h("strong", {}, "Gates failed"),
      h("ul", {}, sm.gate_failures.map((g) => h("li", {}, g)))) : null;
    const notes = sm && sm.notes.length ? h("div", { class: "panel warn" }, h("ul", {}, sm.notes.map((n) => h("li", {}, n)))) : null;

    // Measurements (values off the 0-1 scale) as the API shows them, apart from the scores.
    const measuredShown = shownRun && shownRun.measured && Object.keys(shownRun.measured).length;
    const evalTable = evaluators.length ? h("div", { class: "panel" }, h("h2", {}, "Evaluators"),
      h("div", { class: "table-wrap" }, h("table", { id: "evaluators" }, h("thead", {}, h("tr", {}, h("th", {}, "Evaluator"), h("th", {}, "Mean"), h("th", { class: "num" }, "Values"),
        h("th", { class: "num" }, "Passed"), h("th", { class: "num" }, "Failed"), h("th", { class: "num" }, "Errors"), h("th", { class: "num" }, "Not applicable"),
        measuredShown ? h("th", {}, "Measured") : null)),
      h("tbody", {}, evaluators.map((e) => h("tr", {},
        h("td", {}, h("a", { href: link({ evaluator: e.name, evaluator_state: "", verdict: [], score_bin: "" }) }, e.name)),
        h("td", { class: "nowrap" }, meter(e.mean), figure(shownRun && shownRun.evaluators, e.name)),
        h("td", { class: "num" }, fmt.int(e.scored)),
        h("td", { class: "num" }, e.passed ? h("a", { href: link({ evaluator: e.name, evaluator_state: "passed", verdict: [], score_bin: "" }) }, fmt.int(e.passed)) : "0"),
        h("td", { class: "num" }, e.failed ? h("a", { href: link({ evaluator: e.name, evaluator_state: "failed", verdict: [], score_bin: "" }) }, fmt.int(e.failed)) : "0"),
        h("td", { class: "num" }, e.errors ? h("a", { href: link({ evaluator: e.name, evaluator_state: "error", verdict: [], score_bin: "" }) }, fmt.int(e.errors)) : "0"),
        h("td", { class: "num" }, fmt.int(e.skipped)),
        measuredShown ? h("td", { class: "nowrap measured" }, shownRun.measured[e.name] || "0 value(s)") : null)))))) : null;

    // The run's dataset-level metrics, as the API shows them (values, errors, matrices).
    const datasetShown = shownRun && shownRun.dataset_metrics ? Object.entries(shownRun.dataset_metrics) : [];
    const datasetPanel = datasetShown.length ? h("div", { class: "panel", id: "dataset-metrics" }, h("h2", {}, "Dataset metrics"),
      h("div", { class: "table-wrap" }, h("table", {}, h("tbody", {}, datasetShown.map(([name, text]) =>
        h("tr", {}, h("td", {}, name), h("td", {}, text))))))) : null;

    const binLink = (evaluator) => (i) => link({ evaluator: evaluator || "", evaluator_state: "", score_bin: String(i), verdict: [] });
    const charts = h("div", { class: "panel" }, h("h2", {}, "Score distributions"), h("p", { class: "muted small" }, "Click a bar to list its cases."),
      h("div", { class: "hist-grid" },
        h("figure", {}, h("figcaption", {}, `case score (${fmt.int(hist.case_errors)} ${(shownRun && shownRun.counted) || "cases"} without a score)`), histogram(hist.cases, hist.bin_labels, "#1d2433", "case scores", binLink(""), state.evaluator ? null : state.score_bin)),
        Object.entries(hist.evaluators).map(([name, bins]) => h("figure", {},
          h("figcaption", {}, `${name} (${fmt.int(hist.evaluator_errors[name] || 0)} errors, ${fmt.int(hist.evaluator_skips[name] || 0)} not applicable` +
            ((hist.evaluator_measurements || {})[name] ? `, ${fmt.int(hist.evaluator_measurements[name])} measured)` : ")")),
          histogram(bins, hist.bin_labels, "#3451b2", name, binLink(name), state.evaluator === name ? state.score_bin : null)))));

    return h("div", { class: "wide" },
      STATIC ? null : h("div", { class: "crumbs" }, h("a", { href: "#/runs" }, "Runs"), "› ", run.id),
      h("h1", { id: "run-title" }, run.name || run.id), run.name ? h("div", { class: "muted mono" }, run.id) : null,
      h("div", { class: "meta" }, h("span", { title: run.config.suite_path || "" }, "suite ", h("strong", {}, run.suite), run.config.suite_path ? h("span", { class: "mono" }, " " + shortPath(run.config.suite_path)) : null),
        run.target ? h("span", {}, "target ", h("strong", {}, run.target)) : null,
        badge(run.status), run.status === "completed" ? gateBadge(sm) : null, run.is_baseline ? badge("baseline") : null,
        h("span", {}, fmt.time(run.created_at)), run.finished_at ? h("span", {}, "took " + run.duration) : null,
        run.config.git ? h("span", { class: "mono", id: "run-git", title: run.config.git.commit }, gitText(run.config.git)) : null,
        run.config.agent_version ? h("span", { id: "agent-version" }, "agent ", h("strong", {}, run.config.agent_version)) : null,
        h("span", { class: "tags", id: "run-tags" }, tagChips(run.tags)), actions),
      run.config.description ? h("p", { class: "description" }, run.config.description) : null,
      identityEditor(run),
      livePanel(run),
      gates, notes, summary, repeats, stops,
      familyPanel(run),
      agreementPanel(run, agreement),
      h("div", { class: "grid" }, evalTable, charts),
      datasetPanel,
      casesPanel(run, page, state, filter, evaluators, link, hist.bin_labels),
      h("details", { class: "panel" }, h("summary", {}, "Config snapshot"), h("pre", { id: "config" }, JSON.stringify(run.config, null, 2))));
  }

  // How often people agreed with each judge, where they labelled its scores.
  function agreementPanel(run, agreement) {
    if (!agreement.length) return null;
    return h("div", { class: "panel", id: "agreement" }, h("h2", {}, "Judges and people"),
      h("div", { class: "table-wrap" }, h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Evaluator"), h("th", { class: "num" }, "Labelled"), h("th", { class: "num" }, "Agreed"), h("th", { class: "num" }, "Agreement"), h("th", { class: "num", title: "labelled scores that were errors or skips: no verdict to agree with, so not in the agreement" }, "No verdict"), h("th", {}, "Calibrate it"))),
        h("tbody", {}, agreement.map((a) => h("tr", { "data-evaluator": a.evaluator }, h("td", {}, a.evaluator), h("td", { class: "num" }, fmt.int(a.labelled)), h("td", { class: "num" }, fmt.int(a.agreed)),
          h("td", { class: "num" }, a.agreement_text), h("td", { class: "num no-verdict" }, fmt.int(a.without_verdict || 0)), h("td", {}, h("code", {}, `assay calibrate --run ${run.id} --evaluator ${a.evaluator}`))))))),
      h("p", { class: "muted" }, "The latest label of each score counts. Label a score on its case's page."));
  }

  function casesPanel(run, page, state, filter, evaluators, link, binLabels) {
    const chips = VERDICTS.map((v) => {
      const on = state.verdict.includes(v);
      return h("a", { class: "chip" + (on ? " on" : ""), href: link({ verdict: on ? state.verdict.filter((x) => x !== v) : state.verdict.concat([v]) }), "data-verdict": v }, v, run.summary ? h("span", { class: "count" }, " " + fmt.int(run.summary.verdicts[v] || 0)) : "");
    });
    const search = h("input", { type: "search", id: "case-search", value: state.q, placeholder: "search ids, inputs, outputs (/)", "aria-label": "search cases" });
    search.addEventListener("change", () => go(link({ q: search.value.trim() })));
    const evalSelect = h("select", { id: "evaluator-filter", "aria-label": "evaluator" }, h("option", { value: "" }, "any evaluator"),
      evaluators.map((e) => h("option", { value: e.name, selected: e.name === state.evaluator }, e.name)));
    evalSelect.addEventListener("change", () => go(link({ evaluator: evalSelect.value, evaluator_state: evalSelect.value ? state.evaluator_state : "", score_bin: "" })));
    const stateSelect = h("select", { id: "state-filter", "aria-label": "evaluator result", disabled: !state.evaluator },
      ["", "passed", "failed", "error", "skipped", "value"].map((v) => h("option", { value: v, selected: v === state.evaluator_state }, v === "skipped" ? "not applicable" : v || "any result")));
    stateSelect.addEventListener("change", () => go(link({ evaluator_state: stateSelect.value })));
    const sortSelect = h("select", { id: "sort", "aria-label": "sort" },
      [["problems", "problems first"], ["score", "lowest score"], ["-score", "highest score"], ["case", "case id"], ["-case", "case id, descending"],
        ["latency", "fastest"], ["-latency", "slowest"], ["-finished", "latest"], ["finished", "earliest"]]
        .map(([v, label]) => h("option", { value: v, selected: v === state.sort }, label)));
    sortSelect.addEventListener("change", () => go(link({ sort: sortSelect.value })));
    const binNote = state.score_bin !== "" ? h("span", { class: "chip on", id: "bin-filter" }, `${state.evaluator || "case score"} in ${binLabels[Number(state.score_bin)] || "bin " + state.score_bin}`, " ",
      h("a", { href: link({ score_bin: "" }), "aria-label": "clear the bin filter" }, "×")) : null;

    // A header that sorts: clicking it again turns the order around.
    const sortable = (label, key, extra, cls) => {
      const [up, down] = SORTS[key] || ["score", "-score"];
      const current = (extra && extra.evaluator !== undefined ? state.evaluator === extra.evaluator : !SORTS[key] || key !== "score" || !state.evaluator) && (state.sort === up || state.sort === down);
      const next = current && state.sort === up && up !== down ? down : up;
      return h("th", { class: "sortable " + (cls || ""), "aria-sort": current ? (state.sort === down && up !== down ? "descending" : "ascending") : "none" },
        h("a", { href: link(Object.assign({ sort: next }, extra || {})) }, label, current ? h("span", { class: "arrow" }, state.sort === down && up !== down ? "▼" : "▲") : null));
    };
    const names = evaluators.map((e) => e.name);
    const caseRows = page.items.map((c) => {
      const href = route("case", run.id, { case_id: c.case_id, repeat: c.repeat });
      const row = h("tr", { "data-case": c.case_id, tabindex: "-1", "data-href": href },
        h("td", { class: "id" }, h("a", { href }, c.display && c.display.name ? c.display.name : c.case_id)),
        h("td", {}, badge(c.verdict)),
        h("td", { class: "num" }, figure(c.display, "score")),
        names.map((n) => h("td", { class: "num" }, cell(c.scores[n], figure(c.display && c.display.scores, n)))),
        h("td", { class: "preview" }, h("div", { class: "clamp" }, c.input_preview)),
        h("td", { class: "preview" }, h("div", { class: "clamp" }, c.expected_preview || "")),
        h("td", { class: "preview" }, c.target_error ? h("div", { class: "clamp delta-neg" }, c.target_error) : h("div", { class: "clamp" }, c.output_preview)),
        h("td", { class: "failing" }, c.failing_evaluator ? h("strong", {}, c.failing_evaluator) : ""),
        h("td", { class: "preview" }, h("div", { class: "clamp" }, c.rationale_preview || "")),
        h("td", { class: "num" }, figure(c.display, "latency")));
      row.addEventListener("click", (e) => { if (!e.target.closest("a")) row.classList.toggle("open"); });
      return row;
    });
    const head = h("tr", {}, sortable("Case", "case", { evaluator: "" }), sortable("Verdict", "verdict"), sortable("Score", "score", { evaluator: "" }, "num"),
      names.map((n) => sortable(n, "score", { evaluator: n }, "num")),
      h("th", {}, "Input"), h("th", {}, "Expected"), h("th", {}, "Output"), h("th", {}, "Failing evaluator"), h("th", {}, "Rationale"), sortable("Latency", "latency", {}, "num"));
    return h("div", { class: "panel" }, h("h2", {}, "Cases"),
      h("div", { class: "toolbar" }, chips, evalSelect, stateSelect, search, sortSelect, binNote),
      h("div", { class: "table-wrap" }, h("table", { id: "cases", class: "nav" }, h("thead", {}, head),
        h("tbody", {}, caseRows.length ? caseRows : h("tr", {}, h("td", { colspan: 9 + names.length, class: "muted" }, "No case matches these filters."))))),
      h("div", { class: "toolbar pager-bar" }, pager(page, (o) => route("run", run.id, Object.assign({}, state, { offset: o }))),
        pageSize(state.limit, (n) => go(link({ limit: n }))),
        exportButtons("/runs/" + encodeURIComponent(run.id) + "/export", filter, run.id + "-cases"),
        h("span", { class: "muted small" }, "j/k move · Enter opens · x expands · / searches")));
  }

  function cell(score, text) {
    if (!score) return h("span", { class: "muted" }, "");
    // The outcome as the API says it (assay.types.numbers.outcome): "error CODE", "n/a".
    if (score.state === "error") return h("span", { class: "badge b-error", title: text }, text);
    if (score.state === "skipped") return badge(text, "skipped");
    return h("span", { class: score.passed === false ? "delta-neg" : score.passed ? "delta-pos" : "" }, text);
  }

  // The turns a score (or one of its parts: a multi-metric judge's metrics) cites: the
  // judges' "blamed_turns", or the "turns" a metric's answer gave.
  function blame(sc, blamed) {
    const d = sc.details || {};
    const cited = Array.isArray(d.blamed_turns) ? d.blamed_turns : Array.isArray(d.turns) ? d.turns : [];
    for (const t of cited) {
      if (Number.isInteger(t) && !(blamed[t] = blamed[t] || []).includes(sc.name)) blamed[t].push(sc.name);
    }
    for (const part of Array.isArray(sc.parts) ? sc.parts : []) blame(part, blamed);
  }

  async function casePage(runId, params) {
    const caseId = params.get("case_id") || "";
    const repeat = Number(params.get("repeat") || 0);
    const [detail, run, given] = await Promise.all([
      api("/runs/" + encodeURIComponent(runId) + "/case", { case_id: caseId, repeat }),
      api("/runs/" + encodeURIComponent(runId)),
      STATIC ? Promise.resolve([]) : api("/runs/" + encodeURIComponent(runId) + "/labels", { case_id: caseId, repeat }).catch(() => []),
    ]);
    const r = detail.record;
    const ex = r.execution;
    const blamed = {};
    const chunkRatings = {};
    for (const sc of r.scores) {
      const d = sc.details || {};
      blame(sc, blamed);
      for (const rating of Array.isArray(d.chunk_ratings) ? d.chunk_ratings : []) {
        if (rating && Number.isInteger(rating.index)) (chunkRatings[rating.index] = chunkRatings[rating.index] || []).push(Object.assign({ evaluator: sc.name }, rating));
      }
    }
    const cause = r.cause_analysis;
    if (cause && Number.isInteger(cause.turn)) (blamed[cause.turn] = blamed[cause.turn] || []).push("cause analysis");
    const turns = ex.messages && ex.messages.length ? ex.messages : (Array.isArray(r.case.input) ? r.case.input : []);
    const chunks = (ex.retrieved_context || []).concat(...detail.retrievals.map((x) => x.documents));
    const maxDuration = Math.max(1, ...detail.tool_calls.map((t) => t.duration_ms || 0));
    const shownCase = detail.display || { scores: [], tool_calls: [] };
    const byEvaluator = {};
    for (const label of given) (byEvaluator[label.evaluator] = byEvaluator[label.evaluator] || []).push(label);

    return h("div", {},
      h("div", { class: "crumbs" }, STATIC ? null : [h("a", { href: "#/runs" }, "Runs"), "› "], h("a", { href: route("run", runId) }, run.name || runId), " › ", caseId),
      h("h1", { id: "case-title" }, shownCase.name || caseId),
      h("div", { class: "meta" }, badge(r.verdict), h("span", {}, "score ", h("strong", {}, figure(shownCase, "score"))),
        r.target ? h("span", {}, "target ", h("strong", {}, r.target)) : null, h("span", {}, "latency " + figure(shownCase, "latency")),
        elsewhere(run, caseId)),
      ex.error ? h("div", { class: "panel error", id: "target-error" }, h("strong", {}, "The agent failed: "), ex.error) : null,
      cause ? causePanel(cause, figure(shownCase, "cause_cost")) : null,
      cutsPanel(runId, caseId, repeat, detail),
      traceOrigin((r.case.metadata || {}).trace, detail.trace),
      h("div", { class: "grid" },
        h("div", { class: "panel" }, h("h2", {}, "Input"), block(r.case.input)),
        h("div", { class: "panel" }, h("h2", {}, "Expected output"), block(r.case.expected_output, "(none given)"),
          r.case.expected_outcomes.length ? [h("h3", {}, "Expected outcomes"), h("ul", {}, r.case.expected_outcomes.map((o) => h("li", {}, o)))] : null,
          r.case.guidelines.length ? [h("h3", {}, "Guidelines"), h("ul", {}, r.case.guidelines.map((o) => h("li", {}, o)))] : null)),
      groundTruth(r.case),
      h("div", { class: "panel" }, h("h2", {}, "Agent output"), h("div", { id: "agent-output" }, block(ex.output, "(no output)"))),
      expectedDiff(detail),
      caseFamily(detail),
      h("div", { class: "panel" }, h("h2", {}, "Scores"), r.scores.length ? r.scores.map((sc, i) => scoreCard(sc, shownCase.scores[i], STATIC ? null : { runId, caseId, repeat, labels: byEvaluator[sc.name] || [] })) : h("p", { class: "muted" }, "No scores.")),
      toolMatches(detail.tool_matches),
      traceView(detail.trace),
      detail.tool_calls.length ? h("div", { class: "panel" }, h("h2", {}, "Tool calls"), h("ol", { class: "timeline", id: "tool-calls" },
        detail.tool_calls.map((t, i) => h("li", {}, h("span", { class: "dot" }, String(i + 1)), h("div", {},
          h("strong", {}, t.name), t.duration_ms !== null && t.duration_ms !== undefined ? h("span", { class: "muted" }, " · " + figure(shownCase.tool_calls, i)) : null,
          t.duration_ms ? h("div", { class: "bar", "width%": (100 * t.duration_ms) / maxDuration }) : null,
          h("pre", {}, JSON.stringify(t.args, null, 2)),
          t.output !== null && t.output !== undefined ? [h("div", { class: "muted" }, "returned"), h("pre", {}, pretty(t.output))] : null))))) : null,
      chunks.length ? h("div", { class: "panel" }, h("h2", {}, "Retrieved chunks"), h("ol", { id: "chunks" },
        chunks.map((c, i) => h("li", {},
          c.doc_uri ? h("div", { class: "muted" }, c.doc_uri) : null,
          (chunkRatings[i] || []).map((rt) => [badge(`${rt.evaluator}: ${rt.relevant === true ? "relevant" : rt.relevant === false ? "not relevant" : (rt.rating !== undefined ? String(rt.rating) : "rated")}`, rt.relevant === false ? "fail" : "pass"), " ", rt.reason ? h("span", { class: "muted" }, rt.reason) : null]),
          h("pre", {}, c.content))))) : null,
      turns.length ? h("div", { class: "panel" }, h("h2", {}, "Conversation"),
        ex.conversation ? h("p", { class: "muted", id: "stop-reason" }, "stopped: " + ex.conversation.stop_reason + (ex.conversation.detail ? " — " + ex.conversation.detail : "")) : null,
        h("div", { id: "turns" },
        turns.map((m, i) => h("div", { class: "turn" + (blamed[i] ? " blamed" : ""), "data-turn": i },
          h("span", { class: "role" }, `${i} · ${m.role}`), m.name ? h("span", { class: "muted" }, m.name) : null,
          turnFacts(m, ex.messages === turns ? figure(shownCase.turn_latencies, i) : MISSING),
          blamed[i] ? badge("blamed by " + blamed[i].join(", "), "fail") : null,
          messageText(m.content) ? h("pre", {}, messageText(m.content)) : null,
          (m.tool_calls || []).map((tc) => h("div", { class: "muted" }, "calls ", h("strong", {}, tc.function.name), " ", tc.function.arguments)))))) : null,
      Object.keys(r.case.metadata || {}).length ? h("details", { class: "panel" }, h("summary", {}, "Case metadata"), h("pre", {}, JSON.stringify(r.case.metadata, null, 2))) : null);
  }

  // How the agent's output differs from the expected one, when the case expects one.
  function expectedDiff(detail) {
    const diff = detail.expected_diff;
    if (!diff) return null;
    return h("div", { class: "panel", id: "expected-diff" }, h("h2", {}, "Output against expected"),
      diff.every((l) => l.op === "same") ? h("p", { class: "muted" }, "The output is the expected output.") :
        [h("p", { class: "muted small" }, "− expected, + the agent's output; changed words are marked."), diffView(diff)],
      detail.expected_diff_cut ? h("p", { class: "muted" }, "The outputs are long: the diff covers their first lines.") : null);
  }

  // A failed case's cause analysis (--cause-analysis): the turn and behaviour that caused it, a fix, and what the call cost.
  function causePanel(a, shownCost) {
    const spent = a.usage || {};
    const cost = "cost " + shownCost + (a.model ? " · " + a.model : "") + (spent.cached_calls ? " · cached" : "");
    if (a.error) return h("div", { class: "panel warn", id: "cause-analysis" }, h("h2", {}, "Why it failed"),
      h("p", {}, "The cause analysis could not be made: " + a.error.message), h("p", { class: "muted" }, cost));
    const turn = a.turn === null || a.turn === undefined ? "no single turn" : "turn " + a.turn + (a.turn_role ? " · " + a.turn_role : "");
    return h("div", { class: "panel", id: "cause-analysis" }, h("h2", {}, "Why it failed"),
      h("dl", {},
        h("dt", {}, "where"), h("dd", {}, turn, a.turn_text ? h("pre", {}, a.turn_text) : null),
        h("dt", {}, "behaviour"), h("dd", {}, a.behaviour),
        h("dt", {}, "cause"), h("dd", {}, a.cause),
        h("dt", {}, "suggested fix"), h("dd", {}, a.suggested_fix),
        h("dt", {}, "confidence"), h("dd", {}, a.confidence || "—"),
        a.compared_with ? [h("dt", {}, "compared with"), h("dd", {}, a.compared_with)] : null),
      h("p", { class: "muted" }, "An AI's reading, to check: it changes no verdict. " + cost));
  }

  // What the transcript records of a turn besides what was said: when, how long (shown by the
  // API), how many tokens; null when it records none.
  function turnFacts(m, shownLatency) {
    const parts = [];
    if (typeof m.timestamp === "string") parts.push(m.timestamp.replace("T", " ").replace(/\.\d+Z$/, " UTC"));
    if (shownLatency !== MISSING) parts.push(shownLatency);
    if (typeof m.token_count === "number") parts.push(fmt.int(m.token_count) + " tokens");
    return parts.length ? h("span", { class: "muted turn-facts" }, " " + parts.join(" · ")) : null;
  }

  // The same case elsewhere: side by side with the run's baseline, and in other runs.
  function elsewhere(run, caseId) {
    if (STATIC) return null;
    const links = [];
    if (run.baseline_id && run.baseline_id !== run.id) {
      links.push(h("a", { id: "case-vs-baseline", href: route("compare", null, { baseline: run.baseline_id, candidate: run.id, q: caseId, open: caseId }) }, "side by side with the baseline"));
    }
    links.push(h("a", { id: "case-other-runs", href: route("compare", null, { candidate: run.id, q: caseId, open: caseId }) }, "against another run…"));
    return h("span", { class: "elsewhere" }, links.map((l, i) => [i ? " · " : "", l]));
  }

  function toolMatches(views) {
    if (!views || !views.length) return null;
    return h("div", { class: "panel", id: "tool-matches" }, h("h2", {}, "Expected and actual tool calls"),
      views.map((v) => h("div", { "data-evaluator": v.evaluator }, h("h3", {}, v.evaluator),
        h("div", { class: "table-wrap" }, h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, ""), h("th", {}, "Expected"), h("th", {}, "Expected arguments"), h("th", {}, "Actual arguments"), h("th", {}, "Why not"))),
          h("tbody", {}, v.lines.map((l) => h("tr", { class: l.matched ? "matched" : "unmatched" },
            h("td", {}, badge(l.matched ? "matched" : "missed", l.matched ? "pass" : "fail")),
            h("td", { class: "id" }, l.expected, l.actual_index !== null && l.actual_index !== undefined ? h("div", { class: "muted" }, "call #" + (l.actual_index + 1)) : null),
            h("td", {}, h("pre", { class: "args expected" }, l.expected_args || "(any)")),
            h("td", {}, l.actual_args.length ? l.actual_args.map((a) => h("pre", { class: "args actual" }, a)) : h("span", { class: "muted" }, "no call of this tool")),
            h("td", {}, l.reason || "")))))),
        v.actual.length ? h("p", { class: "muted" }, "actual calls, in order: " + v.actual.join(" → ")) : null)));
  }

  // The trace as a tree, each span's bar on one timeline: where the time went, and what
  // each LLM call cost.
  /** Where a case judged from a trace came from (its id, source and what it lacked), with a
   *  link to the trace's spans on this page. */
  function traceOrigin(origin, trace) {
    if (!origin || typeof origin !== "object" || !origin.id) return null;
    const notes = Array.isArray(origin.notes) ? origin.notes : [];
    return h("div", { class: "panel", id: "trace-origin" },
      h("strong", {}, "Trace "), h("code", {}, String(origin.id)),
      origin.source ? h("span", { class: "muted" }, " from " + String(origin.source)) : null, " · ",
      trace ? h("a", { href: "#", on: { click: (ev) => { ev.preventDefault(); document.getElementById("trace").scrollIntoView(); } } }, "its spans")
        : h("span", { class: "muted" }, "no spans kept"),
      notes.length ? h("ul", { class: "muted" }, notes.map((n) => h("li", {}, String(n)))) : null);
  }

  function traceView(trace) {
    if (!trace || !trace.spans.length) return null;
    const rows = trace.spans.map((sp) => {
      const body = h("tr", { class: "span k-" + sp.kind.toLowerCase() + (sp.status === "error" ? " s-error" : ""), "data-kind": sp.kind },
        h("td", { class: "span-name" }, h("span", { class: "kind" }, sp.kind), " ", sp.name, sp.model ? h("div", { class: "muted" }, sp.model) : null),
        h("td", { class: "waterfall" }, h("div", { class: "lane" }, h("span", { class: "bar-span" }))),
        h("td", { class: "num" }, sp.duration), h("td", { class: "num" }, sp.start), h("td", { class: "num" }, sp.tokens), h("td", { class: "num" }, sp.cost));
      const bar = body.querySelector(".bar-span");
      bar.style.marginLeft = (100 * sp.offset).toFixed(2) + "%";
      bar.style.width = Math.max(0.3, 100 * sp.width).toFixed(2) + "%";
      body.querySelector(".span-name").style.paddingLeft = (8 + 14 * Math.min(sp.depth, 12)) + "px";
      const io = sp.input || sp.output ? h("tr", { class: "span-io", hidden: true }, h("td", { colspan: 6 },
        sp.input ? [h("div", { class: "muted" }, "input"), h("pre", {}, sp.input)] : null,
        sp.output ? [h("div", { class: "muted" }, "output"), h("pre", {}, sp.output)] : null)) : null;
      if (io) body.addEventListener("click", () => { io.hidden = !io.hidden; });
      return [body, io];
    });
    return h("div", { class: "panel", id: "trace" }, h("h2", {}, "Trace"),
      h("p", { class: "muted" }, `${trace.spans.length + trace.spans_not_shown} spans · ${trace.llm_calls} LLM calls · ${trace.tool_calls} tool calls · ${trace.duration}`,
        trace.tokens ? " · " + trace.tokens + " tokens" : "", trace.cost ? " · " + trace.cost : "", ". Click a span for its input and output."),
      h("div", { class: "table-wrap" }, h("table", { id: "spans" }, h("thead", {}, h("tr", {}, h("th", {}, "Span"), h("th", { class: "waterfall" }, "Timeline"), h("th", { class: "num" }, "Took"), h("th", { class: "num" }, "Started"), h("th", { class: "num" }, "Tokens"), h("th", { class: "num" }, "Cost"))),
        h("tbody", {}, rows))),
      trace.spans_not_shown ? h("p", { class: "muted" }, `and ${trace.spans_not_shown} more spans not shown`) : null);
  }

  // A case too large for one page comes with some values cut (a cut text ends with a marker
  // saying how long it is); each can be read whole, on demand.
  function cutsPanel(runId, caseId, repeat, detail) {
    const cuts = detail.cuts || [];
    if (!cuts.length) return null;
    const more = detail.cuts_not_listed || 0;
    return h("div", { class: "panel warn", id: "cuts" }, h("h2", {}, "Shown in part"),
      h("p", {}, "This case is too large to show whole; these values are cut on this page:"),
      h("ul", {}, cuts.map((c) => cutItem(runId, caseId, repeat, c))),
      more ? h("p", {}, "and " + fmt.int(more) + " more") : null);
  }

  function cutItem(runId, caseId, repeat, cut) {
    const whole = h("div", {});
    const button = h("button", { class: "secondary", on: { click: async () => {
      button.disabled = true;
      try {
        const value = await api("/runs/" + encodeURIComponent(runId) + "/case/value", { case_id: caseId, repeat, pointer: cut.pointer });
        whole.replaceChildren(h("pre", {}, value.text),
          value.text.length < value.length ? h("p", {}, "the first " + fmt.int(value.text.length) + " of " + fmt.int(value.length) + " characters") : null);
      } catch (e) {
        whole.replaceChildren(h("p", {}, e.message));
        button.disabled = false;
      }
    } } }, "Show it whole");
    return h("li", { "data-pointer": cut.pointer }, h("code", {}, cut.pointer), " ",
      fmt.int(cut.shown) + " of " + fmt.int(cut.total) + " " + cut.unit + " shown ", STATIC ? null : button, whole);
  }

  const REVIEWER_KEY = "assay-reviewer";

  // A reviewer's label of a judge's score: agree, or say what it should have been, with a
  // comment; the labels given before, newest last.
  function labelBox(sc, labelling) {
    const history = h("ul", { class: "labels" }, labelling.labels.map(labelLine));
    const author = h("input", { class: "label-author", value: localStorage.getItem(REVIEWER_KEY) || "", placeholder: "your name", "aria-label": "your name", size: 14 });
    const comment = h("input", { class: "label-comment", placeholder: "comment (why)", "aria-label": "comment", size: 40 });
    const binary = sc.passed === true || sc.passed === false;
    const correct = binary ? h("select", { class: "label-value", "aria-label": "the correct verdict" }, h("option", { value: "true" }, "should pass"), h("option", { value: "false" }, "should fail")) :
      h("input", { class: "label-value", type: "number", min: 0, max: 1, step: "0.01", placeholder: "correct score, 0-1", "aria-label": "the correct score" });
    if (binary) correct.value = sc.passed ? "false" : "true";
    const status = h("span", { class: "muted", role: "status" });
    const send = async (agrees) => {
      const name = author.value.trim();
      if (!name) { status.textContent = "Give your name first: a label says who gave it."; author.focus(); return; }
      localStorage.setItem(REVIEWER_KEY, name);
      let value = null;
      if (!agrees) value = binary ? correct.value === "true" : correct.value === "" ? null : Number(correct.value);
      try {
        const saved = await api("/runs/" + encodeURIComponent(labelling.runId) + "/labels", {}, "POST", {
          case_id: labelling.caseId, repeat: labelling.repeat, evaluator: sc.name, agrees, value, comment: comment.value, author: name });
        history.appendChild(labelLine(saved));
        comment.value = "";
        status.textContent = "Saved.";
      } catch (e) {
        status.textContent = e.message;
      }
    };
    const agree = h("button", { class: "secondary small label-agree" }, "Agree");
    agree.addEventListener("click", () => send(true));
    const disagree = h("button", { class: "secondary small label-disagree" }, "Disagree");
    disagree.addEventListener("click", () => send(false));
    return h("div", { class: "label-box" }, h("h3", {}, "Your label"), history,
      h("div", { class: "toolbar" }, author, comment, agree, h("span", { class: "muted" }, "or"), correct, disagree, status));
  }

  function labelLine(label) {
    return h("li", { class: label.agrees ? "agrees" : "disagrees" }, badge(label.agrees ? "agrees" : "disagrees", label.agrees ? "pass" : "fail"), " ",
      h("strong", {}, label.author), h("span", { class: "muted" }, " · " + fmt.time(label.created_at)),
      !label.agrees && label.value_shown !== null && label.value_shown !== undefined ? h("span", {}, " · should be " + label.value_shown) : null,
      label.comment ? h("div", {}, label.comment) : null);
  }

  // the badge colour of each outcome a score's display names (Score.outcome)
  const OUTCOME_KIND = { error: "error", "not applicable": "skipped", failed: "fail", passed: "pass" };

  function scoreCard(sc, display, labelling) {
    const shownScore = display || { parts: [] };
    // what became of the evaluator is the server's (Score.outcome); shown, not decided
    const outcome = shownScore.state || "scored";
    const state = { failed: "fail", passed: "pass", "not applicable": "skipped" }[outcome] || outcome;
    const badgeText = outcome; const badgeKind = OUTCOME_KIND[outcome] || "none";
    const d = Object.assign({}, sc.details || {});
    const request = d.judge_request; const answer = d.judge_answer !== undefined ? d.judge_answer : d.raw_output;
    delete d.judge_request; delete d.judge_answer; delete d.raw_output; delete d.blamed_turns; delete d.chunk_ratings;
    return h("div", { class: "score-card s-" + state, "data-evaluator": sc.name },
      h("div", { class: "head" }, h("span", { class: "name" }, sc.name),
        badge(badgeText, badgeKind),
        sc.blocking ? badge("blocking", "fail") : null,
        h("span", { class: "big" }, figure(shownScore, "value"))),
      h("dl", { class: "kv" },
        sc.raw !== null && sc.raw !== undefined ? [h("dt", {}, "raw"), h("dd", {}, (typeof sc.raw === "string" ? sc.raw : JSON.stringify(sc.raw)) + (sc.scale ? " on " + sc.scale : ""))] : null,
        sc.label ? [h("dt", {}, "label"), h("dd", {}, sc.label)] : null,
        sc.judge_model ? [h("dt", {}, "judge"), h("dd", {}, sc.judge_model)] : null,
        sc.latency_ms !== null && sc.latency_ms !== undefined ? [h("dt", {}, "time"), h("dd", {}, figure(shownScore, "latency"))] : null,
        sc.error ? [h("dt", {}, "error"), h("dd", {}, h("strong", {}, sc.error.code), " ", sc.error.message)] : null,
        sc.skipped !== null && sc.skipped !== undefined ? [h("dt", {}, "not applicable"), h("dd", {}, sc.skipped)] : null),
      sc.rationale ? [h("h3", {}, "Rationale"), h("pre", { class: "rationale" }, sc.rationale)] : null,
      sc.hits.length ? h("ul", { class: "hits" }, sc.hits.map((x) => h("li", {}, x))) : null,
      sc.misses.length ? h("ul", { class: "misses" }, sc.misses.map((x) => h("li", {}, x))) : null,
      request !== undefined || answer !== undefined ? h("details", {}, h("summary", {}, "Judge request and answer"),
        Array.isArray(request) ? request.map((m) => h("div", { class: "turn" }, h("span", { class: "role" }, m && m.role ? m.role : "message"), h("pre", {}, messageText(m && m.content)))) : (request !== undefined ? h("pre", {}, pretty(request)) : null),
        answer !== undefined ? [h("h3", {}, "Answer"), h("pre", {}, pretty(answer))] : null) : null,
      Object.keys(d).length ? h("details", {}, h("summary", {}, "Details"), h("pre", {}, JSON.stringify(d, null, 2))) : null,
      sc.parts && sc.parts.length ? h("div", { class: "parts" }, h("h3", {}, "Parts"), sc.parts.map((p, i) => scoreCard(p, shownScore.parts[i]))) : null,
      labelling && !sc.error && (sc.skipped === null || sc.skipped === undefined) ? labelBox(sc, labelling) : null);
  }

  const ALLOW = [["allow_different_cases", "different cases"], ["allow_different_evaluators", "different evaluators"],
    ["allow_different_judge", "a different judge"], ["allow_different_scoring", "different scoring"], ["allow_incomplete", "unfinished runs"]];
  const STATUSES = ["regression", "error", "improvement", "unchanged"];
  const COMPARE_KEYS = ["baseline", "candidate", "max_pass_rate_drop", "max_avg_score_drop", "max_latency_increase_pct", "require_significance"];

  // A run as a picker names it: its name (else its suite) and when it was made.
  function runLabel(r) {
    const name = r.name || r.suite;
    return `${name} · ${r.created_text || ""} · ${r.id}`;
  }

  async function runChoices() {
    if (STATIC) return h("datalist", { id: "run-choices" });
    let page = { items: [] };
    try { page = await api("/runs", { limit: 200 }); } catch (_) { /* the ids can still be typed */ }
    return h("datalist", { id: "run-choices" }, page.items.map((r) => h("option", { value: r.id }, runLabel(r))));
  }

  // A run's cases over their repeats (pass^k, how many flaky) and its first flaky cases, as
  // the API shows them (display.repeats, display.flaky); null for a run without repeats, so
  // no page shows a "-" for them.
  function repeatsLine(shown) {
    const line = figure(shown, "repeats");
    if (line === MISSING) return null;
    const flaky = figure(shown, "flaky");
    return [h("span", { class: "figure" }, line),
      flaky === MISSING ? null : h("span", { class: "flaky" }, " · flaky: ", h("span", { class: "flaky-cases" }, flaky))];
  }

  function directionClass(direction) {
    return direction === "worse" ? "delta-neg" : direction === "better" ? "delta-pos" : "";
  }

  async function comparePage(params) {
    if (STATIC && !STATIC.comparison) return h("div", { class: "panel warn" }, "Comparisons need the server: assay serve.");
    const form = {};
    for (const key of COMPARE_KEYS) form[key] = params.get(key) || "";
    if (STATIC) Object.assign(form, { baseline: STATIC.comparison.baseline_run_id, candidate: STATIC.comparison.candidate_run_id });
    for (const [key] of ALLOW) form[key] = params.get(key) === "true" ? "true" : "";
    const view = { status: params.getAll("status"), q: params.get("q") || "", sort: params.get("sort") || "status",
      limit: Number(params.get("limit") || 100), offset: Number(params.get("offset") || 0), open: params.get("open") || "" };
    const input = (key, label, size) => {
      const el = h("input", { name: key, value: form[key], placeholder: label, "aria-label": label, size: size || 24 });
      el.addEventListener("change", () => { form[key] = el.value.trim(); });
      return el;
    };
    const allowBox = ([key, label]) => {
      const box = h("input", { type: "checkbox", name: key });
      box.checked = form[key] === "true";
      box.addEventListener("change", () => { form[key] = box.checked ? "true" : ""; });
      return h("label", { class: "allow" }, box, " allow " + label);
    };
    const picked = (key, label) => {
      const el = h("input", { name: key, value: form[key], placeholder: label, "aria-label": label, size: 34, list: "run-choices", autocomplete: "off" });
      el.addEventListener("change", () => { form[key] = el.value.trim(); });
      el.addEventListener("input", () => { form[key] = el.value.trim(); });
      return el;
    };
    const submit = h("button", { id: "compare-go" }, "Compare");
    submit.addEventListener("click", () => go(route("compare", null, form)));
    const swap = h("button", { class: "secondary", id: "compare-swap", title: "swap the two runs" }, "⇄");
    swap.addEventListener("click", () => go(route("compare", null, Object.assign({}, form, { baseline: form.candidate, candidate: form.baseline }))));
    const options = STATIC ? null : h("details", { class: "options", open: ALLOW.some(([key]) => form[key]) || COMPARE_KEYS.slice(2).some((key) => form[key]) },
      h("summary", {}, "Thresholds and allowed differences"),
      h("div", { class: "toolbar" }, input("max_pass_rate_drop", "max pass-rate drop (0.0)", 10), input("max_avg_score_drop", "max score drop, points (5.0)", 12),
        input("max_latency_increase_pct", "max latency rise (0.2)", 10), input("require_significance", "require significance (e.g. 0.05)", 14)),
      h("div", { class: "toolbar", id: "allow" }, ALLOW.map(allowBox)));
    const head = h("div", {}, h("h1", {}, "Compare runs"),
      STATIC ? null : h("div", { class: "toolbar", id: "run-picker" }, await runChoices(), h("label", {}, "baseline", picked("baseline", "baseline run")), swap,
        h("label", {}, "candidate", picked("candidate", "candidate run")), submit),
      options);
    if (!STATIC && (!form.baseline || !form.candidate)) {
      return h("div", {}, head, h("div", { class: "panel", id: "compare-empty" }, h("h2", {}, "Pick two runs"),
        h("p", {}, "Choose a baseline and a candidate above (type to search the recent runs), or tick two runs on the ",
          h("a", { href: "#/runs" }, "runs page"), " and press Compare selected. From the command line: ", h("code", {}, "assay compare RUN_A RUN_B"), ".")));
    }
    const query = Object.assign(compareQuery(form, view), { case_limit: view.limit, case_offset: view.offset });
    let cmp;
    try {
      cmp = await api("/runs/compare", query);
    } catch (e) {
      if (e instanceof Failure && e.status === 400) {
        if (options) options.open = true;
        return h("div", {}, head, h("div", { class: "panel warn", id: "not-comparable" }, badge("not comparable", "error"), " ", e.message,
          h("p", { class: "muted" }, "Tick what to allow above and compare again: the same refusal as assay compare's exit 2.")));
      }
      throw e;
    }
    const b = cmp.baseline_run, c = cmp.candidate_run;
    const v = cmp.verdict;
    const d = cmp.aggregate;
    const here = (changes) => route("compare", null, Object.assign({}, form, { status: view.status, q: view.q, sort: view.sort, limit: view.limit, offset: 0 }, changes));
    const totals = { regression: d.total_regressions, error: d.total_errors, improvement: d.total_improvements, unchanged: d.total_unchanged };
    // The paired test's verdict is the server's one string (ReasonRow.significance), as the terminal and Markdown show it.
    const reasonLine = (r) => h("li", {}, r.text,
      r.significance ? h("span", { class: "muted reason-significance" }, ` · ${r.significance}`) : null, " ",
      r.significant === null || r.significant === undefined ? null : r.significant ? badge("significant", "regression") : badge("not significant", "unchanged"),
      r.counted ? null : [" ", badge("not counted", "skipped")]);
    const runLink = (run) => h("a", { href: route("run", run.id), class: "run-link" }, run.name || run.id);
    const verdict = h("div", { class: "panel", id: "verdict" }, h("div", { class: "verdict-banner" },
      v.regression_detected ? badge("regression detected", "regression") : cmp.exit_status ? badge("candidate failed its gates", "regression") : badge("no regression", "improvement"),
      cmp.comparable ? null : badge("differences allowed", "error"),
      h("span", { id: "headline" }, cmp.headline_text)),
      h("p", { class: "runs-compared" }, "baseline ", runLink(b), b.name ? h("span", { class: "muted" }, " " + b.id) : null, " → candidate ", runLink(c), c.name ? h("span", { class: "muted" }, " " + c.id) : null),
      cmp.reason_rows.length ? h("ul", { id: "reasons" }, cmp.reason_rows.map(reasonLine)) : h("p", { class: "muted" }, "No threshold was crossed."),
      h("p", { class: "muted", id: "thresholds" }, cmp.thresholds_text),
      cmp.warnings.map((w) => h("div", { class: "panel warn" }, w)));
    const figures = h("div", { class: "panel" }, h("h2", {}, "Figures"), h("div", { class: "table-wrap" }, h("table", {},
      h("thead", {}, h("tr", {}, h("th", {}, ""), h("th", { class: "num" }, "Baseline"), h("th", { class: "num" }, "Candidate"), h("th", { class: "num" }, "Change"))),
      h("tbody", { id: "figures" }, cmp.figures.map((f) => h("tr", { "data-direction": f.direction }, h("td", {}, f.label), h("td", { class: "num" }, f.baseline), h("td", { class: "num" }, f.candidate),
        h("td", { class: "num" }, h("span", { class: directionClass(f.direction) }, f.change))))))));
    const evaluators = h("div", { class: "panel" }, h("h2", {}, "Per evaluator"), cmp.evaluator_rows.length ? h("div", { class: "table-wrap" }, h("table", { id: "metric-deltas" },
      h("thead", {}, h("tr", {}, h("th", {}, "Evaluator"), h("th", {}, "Figure"), h("th", { class: "num" }, "Baseline"), h("th", { class: "num" }, "Candidate"), h("th", { class: "num" }, "Change"))),
      h("tbody", {}, cmp.evaluator_rows.map((e) => h("tr", {}, h("td", {}, e.name), h("td", { class: "muted" }, e.scale), h("td", { class: "num" }, e.baseline), h("td", { class: "num" }, e.candidate),
        h("td", { class: "num" }, h("span", { class: directionClass(e.direction) }, e.change))))))) : h("p", { class: "muted" }, "No evaluator figures."));
    const significance = h("div", { class: "panel" }, h("h2", {}, "Significance"),
      h("p", { class: "muted" }, "Paired tests on the cases both runs hold; each difference is the candidate's minus the baseline's, with its 95% interval."),
      cmp.significance_rows.length ? h("div", { class: "table-wrap" }, h("table", { id: "significance" }, h("thead", {}, h("tr", {}, h("th", {}, "Test"), h("th", {}, "Method"), h("th", { class: "num" }, "Pairs"), h("th", { class: "num" }, "Difference"), h("th", { class: "num" }, "95% interval"), h("th", { class: "num" }, "p"), h("th", {}, ""))),
        h("tbody", {}, cmp.significance_rows.map((t) => h("tr", { "data-test": t.name }, h("td", { class: "id" }, t.label), h("td", {}, t.method), h("td", { class: "num" }, t.pairs),
          h("td", { class: "num" }, h("span", { class: directionClass(t.direction) }, t.difference)), h("td", { class: "num" }, t.interval), h("td", { class: "num" }, t.p_value),
          h("td", {}, badge(t.outcome, t.outcome === "significant" ? (t.direction === "worse" ? "regression" : "improvement") : t.outcome === "not tested" ? "skipped" : "unchanged"),
            t.warnings.length ? h("div", { class: "muted" }, t.warnings.join("; ")) : null)))))) :
        h("p", { class: "muted", id: "significance" }, "No case is in both runs: nothing to test."));

    // Each run with repeats: its cases over their repeats, as its own run page shows them.
    const sideRepeats = [["baseline", b], ["candidate", c]].map(([side, run]) => [side, repeatsLine(run.display)]).filter(([, shown]) => shown);
    const repeats = sideRepeats.length ? h("div", { class: "panel", id: "compare-repeats" }, h("h2", {}, "Repeats"),
      h("ul", {}, sideRepeats.map(([side, shown]) => h("li", { "data-side": side }, h("strong", {}, side), " ", shown)))) : null;

    const cases = compareCases(cmp, form, view, here, totals);
    return h("div", { class: "wide" }, head, verdict, repeats, h("div", { class: "grid" }, figures, evaluators), cases, significance, configDiffPanel(cmp.config_diff));
  }

  function compareCases(cmp, form, view, here, totals) {
    const b = cmp.baseline_run, c = cmp.candidate_run;
    const search = h("input", { type: "search", id: "compare-search", value: view.q, placeholder: "case id", "aria-label": "search case ids" });
    search.addEventListener("change", () => go(here({ q: search.value.trim() })));
    const sort = h("select", { id: "compare-sort", "aria-label": "order" },
      [["status", "regressions first"], ["delta", "largest drop"], ["-delta", "largest rise"], ["case", "case id"]].map(([k, label]) => h("option", { value: k, selected: k === view.sort }, label)));
    sort.addEventListener("change", () => go(here({ sort: sort.value })));
    const chips = STATUSES.map((st) => h("a", { class: "chip" + (view.status.includes(st) ? " on" : ""), "data-status": st,
      href: here({ status: view.status.includes(st) ? view.status.filter((x) => x !== st) : view.status.concat([st]) }) }, st, " ", h("span", { class: "count" }, fmt.int(totals[st]))));
    const rows = [];
    cmp.case_rows.forEach((x) => {
      const caseLink = (run, text) => h("a", { href: route("case", run.id, { case_id: x.case_id, repeat: 0 }), class: "side-link" }, text);
      const detail = h("tr", { class: "sides-row", hidden: true }, h("td", { colspan: 8 }, h("div", { class: "sides" })));
      const toggle = h("button", { class: "secondary small", "aria-expanded": "false", "aria-label": "side by side " + x.case_id }, "diff");
      const open = async () => {
        const shown = detail.hidden;
        detail.hidden = !shown;
        toggle.setAttribute("aria-expanded", String(shown));
        if (shown && !detail.dataset.loaded) {
          detail.dataset.loaded = "1";
          const box = detail.querySelector(".sides");
          box.replaceChildren(h("p", { class: "muted" }, "Loading…"));
          try {
            const sides = await api("/runs/compare/case", { baseline_run_id: b.id, candidate_run_id: c.id, case_id: x.case_id });
            box.replaceChildren(sidesView(sides, b, c));
          } catch (e) {
            box.replaceChildren(h("p", { class: "error" }, e.message));
          }
        }
      };
      toggle.addEventListener("click", open);
      const row = h("tr", { "data-case": x.case_id, tabindex: "-1", "data-direction": x.direction },
        h("td", {}, badge(x.status)),
        h("td", { class: "id" }, h("span", { class: "case-name" }, x.case_id)),
        h("td", { class: "num" }, x.baseline), h("td", { class: "num" }, x.candidate),
        h("td", { class: "num" }, h("span", { class: directionClass(x.direction) }, x.change)),
        h("td", {}, x.passed), h("td", { class: "num" }, x.latency_change),
        h("td", { class: "nowrap" }, toggle, " ", caseLink(b, "baseline"), " · ", caseLink(c, "candidate")));
      row.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); open(); } });
      rows.push(row, detail);
      if (view.open && view.open === x.case_id) setTimeout(open, 0);
    });
    const pagerView = pager({ offset: cmp.case_offset, limit: cmp.case_limit, total: cmp.case_total }, (o) => here({ offset: o }));
    return h("div", { class: "panel" }, h("h2", {}, "Cases"),
      h("div", { class: "toolbar" }, chips, search, STATIC ? null : sort, pageSize(view.limit, (n) => go(here({ limit: n }))),
        exportButtons("/runs/compare/export", compareQuery(form, view), "comparison-" + b.id + "-" + c.id)),
      h("div", { class: "table-wrap" }, h("table", { id: "case-deltas", class: "nav" }, h("thead", {}, h("tr", {}, h("th", {}, "Status"), h("th", {}, "Case"),
        h("th", { class: "num" }, "Baseline (0-100)"), h("th", { class: "num" }, "Candidate (0-100)"), h("th", { class: "num" }, "Change"), h("th", {}, "Passed"), h("th", { class: "num" }, "Turn latency"), h("th", {}, ""))),
        h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 8, class: "muted" }, "No case matches."))))),
      pagerView,
      cmp.baseline_only_test_cases.length || cmp.candidate_only_test_cases.length ? h("p", { class: "muted" }, `only in the baseline: ${fmt.int(cmp.baseline_only_test_cases.length)}; only in the candidate: ${fmt.int(cmp.candidate_only_test_cases.length)}`) : null);
  }

  // What the server is asked for: the two runs, the thresholds and allowances, and which cases.
  function compareQuery(form, view) {
    const query = { baseline_run_id: form.baseline, candidate_run_id: form.candidate,
      max_pass_rate_drop: form.max_pass_rate_drop, max_avg_score_drop: form.max_avg_score_drop, max_latency_increase_pct: form.max_latency_increase_pct,
      require_significance: form.require_significance, case_status: view.status, case_q: view.q, case_sort: view.sort };
    for (const [key] of ALLOW) query[key] = form[key];
    return query;
  }

  function sidesView(sides, b, c) {
    const side = (label, run, s) => h("div", { class: "side" }, h("h3", {}, label, " ", h("a", { href: route("case", run.id, { case_id: sides.case_id, repeat: s ? s.repeat : 0 }) }, run.name || run.id)),
      s ? [h("div", { class: "meta" }, badge(s.verdict), h("span", {}, "score ", h("strong", {}, s.score)), h("span", {}, "latency " + s.latency)),
        s.error ? h("div", { class: "panel error" }, s.error) : null,
        h("pre", { class: "output" }, s.output || "(no output)"),
        h("ul", { class: "score-lines" }, s.scores.map((sc) => h("li", { class: "s-" + sc.state.replace(/ /g, "-") }, h("strong", {}, sc.name), " ", badge(sc.state, OUTCOME_KIND[sc.state] || "none"), " ", sc.value,
          sc.rationale ? h("div", { class: "muted rationale" }, sc.rationale) : null)))] : h("p", { class: "muted" }, "Not in this run."));
    return h("div", {},
      h("div", { class: "grid" }, h("div", {}, h("h3", {}, "Input"), h("pre", {}, sides.input)), sides.expected !== null && sides.expected !== undefined ? h("div", {}, h("h3", {}, "Expected"), h("pre", {}, sides.expected)) : null),
      h("div", { class: "side-by-side" }, side("Baseline", b, sides.baseline), side("Candidate", c, sides.candidate)),
      h("h3", {}, "Output diff"), sides.diff.every((l) => l.op === "same") ? h("p", { class: "muted" }, "The outputs are the same.") : diffView(sides.diff),
      sides.diff_cut ? h("p", { class: "muted" }, "The outputs are long: the diff covers their first lines.") : null);
  }

  function configDiffPanel(cd) {
    const change = (label, ch) => (ch ? h("tr", {}, h("td", { class: "id" }, label + " · " + ch.field), h("td", {}, h("pre", {}, pretty(ch.old_value === null ? "null" : ch.old_value))), h("td", {}, h("pre", {}, pretty(ch.new_value === null ? "null" : ch.new_value)))) : null);
    const listRow = (label, items) => (items.length ? h("tr", {}, h("td", { class: "id" }, label), h("td", { colspan: 2 }, items.join(", "))) : null);
    const diffRows = [change("agent model", cd.agent_model_changed), change("target", cd.target_changed), change("judge model", cd.judge_model_changed),
      change("simulated user's model", cd.simulator_model_changed), change("scoring", cd.scoring_changed),
      (cd.identity_changes || []).map((ch) => change("run", ch)),
      cd.judge_settings_changed.map((ch) => change("judge settings", ch)), cd.run_config_changes.map((ch) => change("run", ch)),
      (cd.target_config_changes || []).map((ch) => change("target settings", ch)),
      listRow("tools added", cd.tools_diff.added), listRow("tools removed", cd.tools_diff.removed),
      listRow("tools modified", cd.tools_diff.modified.map((t) => t.name + " (" + t.changed_keys.join(", ") + ")")),
      listRow("cases added", cd.eval_set.added), listRow("cases removed", cd.eval_set.removed),
      cd.prompt_diff.changed ? h("tr", {}, h("td", { class: "id" }, `system prompt (+${cd.prompt_diff.added_line_count} −${cd.prompt_diff.removed_line_count})`), h("td", { colspan: 2 }, h("pre", {}, cd.prompt_diff.diff))) : null].flat().filter(Boolean);
    return h("div", { class: "panel" }, h("h2", {}, "What changed between the runs"), diffRows.length ? h("div", { class: "table-wrap" }, h("table", { id: "config-diff" }, h("thead", {}, h("tr", {}, h("th", {}, "What"), h("th", {}, "Baseline"), h("th", {}, "Candidate"))),
      h("tbody", {}, diffRows))) : h("p", { class: "muted" }, "The two runs were made the same way (same agent, judge, settings, commit and version as recorded)."));
  }

  // -- live runs -----------------------------------------------------------------------------

  // Server-sent events read with fetch (EventSource cannot send the token): each event to
  // ``onEvent`` until the stream ends or ``signal`` aborts it.
  async function follow(path, onEvent, signal) {
    const headers = { Accept: "text/event-stream" };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = "Bearer " + token;
    const response = await fetch(new URL(path, location.origin), { headers, credentials: "omit", signal });
    if (!response.ok || !response.body) return;
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const name = (block.match(/^event: (.*)$/m) || [])[1];
        const data = (block.match(/^data: (.*)$/m) || [])[1];
        if (name && data) {
          try { onEvent(name, JSON.parse(data)); } catch (_) { /* a malformed event is skipped */ }
        }
      }
    }
  }

  let liveStop = null;

  // A running run's progress, its newest cases as they finish, and (for a run this server
  // started) a cancel button; the page is drawn again when the run ends.
  function livePanel(run) {
    if (STATIC || run.status !== "running") return null;
    const bar = h("div", { class: "progress" }, h("span", { "width%": 0 }));
    const text = h("span", { id: "live-progress" }, "waiting for the first case…");
    const rows = h("tbody", {});
    const cancel = run.running_here ? h("button", { class: "secondary", id: "cancel-run" }, "Cancel run") : null;
    if (cancel) {
      cancel.addEventListener("click", async () => {
        cancel.disabled = true;
        try { await api("/runs/" + encodeURIComponent(run.id) + "/cancel", {}, "POST"); } catch (e) { text.textContent = e.message; }
      });
    }
    const panel = h("div", { class: "panel live", id: "live" }, h("h2", {}, badge("running", "running"), " Live"),
      h("div", { class: "toolbar" }, text, cancel), bar,
      h("h3", {}, "Latest cases"), h("div", { class: "table-wrap" }, h("table", { id: "live-cases" },
        h("thead", {}, h("tr", {}, h("th", {}, "Case"), h("th", {}, "Verdict"), h("th", { class: "num" }, "Score"), h("th", {}, "Output"))), rows)));
    let last = 0;
    const refresh = async () => {
      const now = Date.now();
      if (now - last < 1000) return;
      last = now;
      const page = await api("/runs/" + encodeURIComponent(run.id) + "/cases", { sort: "-finished", limit: 10 });
      rows.replaceChildren(...page.items.map((c) => h("tr", {}, h("td", { class: "id" }, h("a", { href: route("case", run.id, { case_id: c.case_id, repeat: c.repeat }) }, c.case_id)),
        h("td", {}, badge(c.verdict)), h("td", { class: "num" }, figure(c.display, "score")), h("td", { class: "preview" }, h("div", { class: "clamp" }, c.target_error || c.output_preview)))));
    };
    if (liveStop) liveStop.abort();
    const controller = new AbortController();
    liveStop = controller;
    const shown = location.hash;
    follow("/runs/" + encodeURIComponent(run.id) + "/stream", (name, data) => {
      if (location.hash !== shown) { controller.abort(); return; }
      if (data.progress_text) text.textContent = data.progress_text;
      if (data.total_count) bar.firstChild.style.width = Math.min(100, (100 * data.completed_count) / data.total_count) + "%";
      if (name === "test_case_completed" || name === "run_progress") refresh().catch(() => null);
      if (name === "run_completed" || name === "run_cancelled" || name === "run_failed") { controller.abort(); render(); }
    }, controller.signal).catch(() => null);
    refresh().catch(() => null);
    return panel;
  }

  // -- keyboard ------------------------------------------------------------------------------

  // j/k (or the arrows) move through the rows of a page's main table, Enter or o opens the
  // current row, x expands it, / goes to the search box, Escape leaves a field.
  function onKey(e) {
    const target = e.target;
    if (target && target.closest && target.closest("input, textarea, select")) {
      if (e.key === "Escape") target.blur();
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "/") {
      const search = document.querySelector("#case-search, #compare-search, #runs-search, input[name=q]");
      if (search) { e.preventDefault(); search.focus(); }
      return;
    }
    const table = document.querySelector("table.nav");
    if (!table) return;
    const rows = Array.from(table.querySelectorAll("tbody tr[tabindex]"));
    if (!rows.length) return;
    const current = table.querySelector("tbody tr.current");
    let i = rows.indexOf(current);
    if (e.key === "j" || e.key === "ArrowDown") i = Math.min(rows.length - 1, i + 1);
    else if (e.key === "k" || e.key === "ArrowUp") i = Math.max(0, i - 1);
    else if ((e.key === "Enter" || e.key === "o") && current) {
      e.preventDefault();
      if (current.dataset.href) go(current.dataset.href);
      else { const button = current.querySelector("button"); if (button) button.click(); }
      return;
    } else if (e.key === "x" && current) { current.classList.toggle("open"); return; }
    else return;
    e.preventDefault();
    if (current) current.classList.remove("current");
    rows[i].classList.add("current");
    rows[i].focus({ preventScroll: true });
    rows[i].scrollIntoView({ block: "nearest" });
  }

  // -- family views ----------------------------------------------------------------------------

  function passBadge(passed, yes, no) {
    return passed === null || passed === undefined ? badge("not gated", "skipped") : passed ? badge(yes || "met", "pass") : badge(no || "not met", "fail");
  }

  // A run in its family's terms: Databricks' or MLflow's aggregates and gate, Connexity's
  // metrics over the run and its two dimensions against their thresholds.
  function familyPanel(run) {
    const f = run.family;
    if (!f) return null;
    const title = f.naming === "mlflow" ? "MLflow view" : f.naming === "databricks" ? "Databricks view" : f.metric_means.length ? "Connexity view" : "Dimensions";
    return h("div", { class: "panel family", id: "run-family" }, h("h2", {}, title),
      f.dimensions.length ? h("div", { class: "table-wrap" }, h("table", { id: "dimensions" }, h("thead", {}, h("tr", {}, h("th", {}, "Dimension"), h("th", { class: "num" }, "Value"), h("th", {}, "Threshold"), h("th", {}, ""))),
        h("tbody", {}, f.dimensions.map((d) => h("tr", {}, h("td", {}, d.name), h("td", { class: "num" }, d.value), h("td", {}, d.threshold), h("td", {}, d.threshold ? passBadge(d.passed) : null)))))) : null,
      f.metric_means.length ? [h("h3", {}, "Metrics over the run (each 0-5; binary ones as the share passed)"), h("div", { class: "table-wrap" }, h("table", { id: "metric-means" },
        h("thead", {}, h("tr", {}, h("th", {}, "Metric"), h("th", {}, "Mean"), h("th", { class: "num" }, "Cases"))),
        h("tbody", {}, f.metric_means.map((m) => h("tr", {}, h("td", {}, m.metric), h("td", { class: "nowrap" }, meter(m.fraction), m.mean), h("td", { class: "num" }, m.cases))))))] : null,
      f.aggregates.length ? [h("h3", {}, "Aggregates in " + (f.naming === "mlflow" ? "MLflow's" : "Databricks'") + " names"), h("div", { class: "table-wrap" }, h("table", { id: "named-aggregates" },
        h("thead", {}, h("tr", {}, h("th", {}, "Metric"), h("th", { class: "num" }, "Value"), h("th", {}, "Assessment"), h("th", {}, "Counts"))),
        h("tbody", {}, f.aggregates.map((a) => h("tr", {}, h("td", { class: "id" }, a.key), h("td", { class: "num" }, a.value), h("td", {}, a.assessment), h("td", { class: "muted" }, a.counts))))))] : null,
      f.gate ? h("p", { class: "muted" }, "The run is decided by " + (f.gate === "criteria" ? "its quality criteria" : "every judgement passing") + ".") : null,
      f.assertion_failures.length ? [h("h3", {}, "Failed judgements"), h("ul", { class: "misses" }, f.assertion_failures.map((x) => h("li", {}, x)))] : null,
      f.criteria ? [h("h3", {}, "Quality criteria"), h("pre", {}, f.criteria), f.criteria_failures.length ? h("ul", { class: "misses" }, f.criteria_failures.map((x) => h("li", {}, x))) : h("p", { class: "muted" }, "All met.")] : null);
  }

  // A case in its family's terms: each multi-metric judge's metrics and outcomes, and the
  // case's row in the seed's names with its overall assessment.
  function caseFamily(detail) {
    const f = detail.family;
    if (!f) return null;
    return [f.connexity.map((c) => h("div", { class: "panel family connexity", "data-evaluator": c.evaluator },
      h("h2", {}, c.evaluator, " ", h("span", { class: "muted" }, "overall " + c.overall), " ", passBadge(c.passed, "passed", "failed")),
      h("p", { class: "muted" }, c.gate === "expected_outcomes" ? "Decided by its expected outcomes." : "Decided by the overall score against the pass threshold, " + c.pass_threshold + "."),
      c.outcomes.length ? [h("h3", {}, "Expected outcomes"), h("ul", { class: "checklist", id: "outcomes" }, c.outcomes.map((o) => h("li", { class: o.passed ? "met" : "unmet" },
        badge(o.passed ? "met" : "not met", o.passed ? "pass" : "fail"), " ", h("strong", {}, o.statement), o.justification ? h("div", { class: "muted" }, o.justification) : null)))] : null,
      h("h3", {}, "Metrics (each 0-5)"), h("div", { class: "table-wrap" }, h("table", { class: "metrics" }, h("thead", {}, h("tr", {}, h("th", {}, "Metric"), h("th", {}, "Score"), h("th", {}, "Label"), h("th", {}, "Why"), h("th", {}, "Failure"), h("th", {}, "Turns"))),
        h("tbody", {}, c.metrics.map((m) => h("tr", { "data-metric": m.metric }, h("td", {}, m.display_name), h("td", { class: "nowrap" }, meter(m.fraction), m.score), h("td", {}, m.label),
          h("td", {}, m.justification), h("td", {}, m.failure_code || ""), h("td", {}, m.turns.join(", "))))))))),
    f.naming ? h("div", { class: "panel family", id: "named-row" }, h("h2", {}, f.naming === "mlflow" ? "MLflow row" : "Databricks row"),
      f.overall_assessment ? h("p", {}, "overall assessment ", badge(f.overall_assessment, f.overall_assessment === "yes" ? "pass" : "fail"), " ", h("span", { class: "muted" }, f.overall_rationale || "")) : null,
      h("div", { class: "table-wrap" }, h("table", {}, h("tbody", {}, f.named.map((c) => h("tr", {}, h("td", { class: "id" }, c.key), h("td", {}, h("div", { class: "clamp-long" }, c.value)))))))) : null];
  }

  // Everything a case says a good answer is, beyond its expected output.
  function groundTruth(c) {
    const facts = c.expected_facts || [], docs = c.expected_retrieved_context || [], named = Object.entries(c.named_guidelines || {});
    const refs = c.reference_context || [], calls = c.expected_tool_calls || [];
    if (!facts.length && !docs.length && !named.length && !refs.length && !calls.length) return null;
    return h("div", { class: "panel", id: "ground-truth" }, h("h2", {}, "Ground truth"),
      facts.length ? [h("h3", {}, "Expected facts"), h("ul", { id: "expected-facts" }, facts.map((x) => h("li", {}, x)))] : null,
      docs.length ? [h("h3", {}, "Expected retrieved context"), h("ol", { id: "expected-context" }, docs.map((d) => h("li", {}, h("div", { class: "muted" }, d.doc_uri), d.content ? h("pre", {}, d.content) : null)))] : null,
      named.map(([name, lines]) => [h("h3", {}, "Guidelines: " + name), h("ul", {}, lines.map((x) => h("li", {}, x)))]),
      refs.length ? [h("h3", {}, "Reference context"), refs.map((x) => h("pre", {}, x))] : null,
      calls.length ? [h("h3", {}, "Expected tool calls"), h("pre", { id: "expected-tool-calls" }, JSON.stringify(calls, null, 2))] : null);
  }

  // -- start ------------------------------------------------------------------------------

  function start() {
    const match = location.hash.match(/[#&?]token=([^&]+)/);
    if (match) {
      sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
      history.replaceState(null, "", location.pathname + "#/runs");
    }
    const origin = document.getElementById("origin");
    if (origin) origin.textContent = STATIC ? "static report · " + STATIC.generated : "";
    const nav = document.querySelector(".top nav");
    if (nav && STATIC) {
      nav.replaceChildren(...(STATIC.comparison ? [h("a", { href: "#/compare" }, "Comparison"), h("a", { href: route("run", STATIC.run.id) }, "Run")] : []));
      nav.hidden = !STATIC.comparison;
    }
    window.addEventListener("hashchange", render);
    document.addEventListener("keydown", onKey);
    render();
  }

  start();
})();
