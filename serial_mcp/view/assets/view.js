/* serial-mcp capture view. Plain JS, no library: canvas timeline, paged transcript and frame
 * table, SVG plots. Reads the JSON in #view-data (layout: serial_mcp/view/*.py docstrings).
 * State and counts are kept on window.serialView for tests and for the curious. */
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("view-data").textContent);
  const META = D.meta, TL = D.timeline, ROWS = D.rows, FR = D.frames, SERIES = D.series || [];
  const N = TL.t.length;
  const ROW_PAGE = 400, FRAME_PAGE = 250, MAX_DOTS = 2000;
  const MARK_COLORS = {
    control: "#7b4fc9", "break": "#c62828", config: "#00838f", respond: "#2e7d32", open: "#607d8b",
    close: "#607d8b", error: "#b71c1c", reconnect: "#ad1457", lost: "#e91e63", marker: "#8d6e00",
  };
  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const lowerBound = (arr, x) => { // first index with arr[i] >= x
    let lo = 0, hi = arr.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (arr[mid] < x) lo = mid + 1; else hi = mid; }
    return lo;
  };
  const fmtT = (t) => t.toFixed(6);
  const fmtDur = (s) => s >= 120 ? (s / 60).toFixed(1) + " min" : s >= 10 ? s.toFixed(1) + " s" :
    s >= 1 ? s.toFixed(2) + " s" : (s * 1000).toFixed(s >= 0.01 ? 0 : 2) + " ms";
  const settings = META.settings || {};
  const baud = Number(settings.baudrate) || 0;
  const bitsPerChar = 1 + (Number(settings.bytesize) || 8) + ((settings.parity || "N") === "N" ? 0 : 1) +
    (Number(settings.stopbits) || 1);
  const duration = Math.max(META.duration || 0, N ? TL.t[N - 1] : 0, 1e-3);
  const rowT = Float64Array.from(ROWS, (r) => r[0]);
  const rowE = Int32Array.from(ROWS, (r) => r[5]);
  const markerRows = [];
  ROWS.forEach((r, i) => { if (r[1] === "m") markerRows.push(i); });
  let rxEvents = 0;
  for (let i = 0; i < N; i++) if (TL.dir.charCodeAt(i) === 114) rxEvents++;

  const state = {
    t0: -duration * 0.01, t1: duration * 1.01, cursor: null,
    rowPage: 0, selectedRow: -1, frPage: 0, frSelected: -1,
    query: "", hits: [], hit: -1,
    drawnEvents: 0, drawnColumns: 0, drawnGaps: 0, drawnMarkers: 0,
  };
  window.serialView = {
    data: D, state: state, events: N, rxEvents: rxEvents, txEvents: N - rxEvents,
    rows: ROWS.length, errors: [],
  };

  // --- text rendering: ANSI SGR colours, visible control bytes -----------------------------------
  const PALETTE = ["#000000", "#c62828", "#2e7d32", "#a67c00", "#1565c0", "#8e24aa", "#00838f", "#9e9e9e",
    "#616161", "#ef5350", "#43a047", "#d4a017", "#42a5f5", "#ba68c8", "#26c6da", "#424242"];
  const color256 = (n) => {
    if (n < 16) return PALETTE[n];
    if (n < 232) {
      n -= 16;
      const c = [Math.floor(n / 36), Math.floor(n / 6) % 6, n % 6].map((v) => (v ? v * 40 + 55 : 0));
      return "rgb(" + c.join(",") + ")";
    }
    const g = 8 + (n - 232) * 10;
    return "rgb(" + g + "," + g + "," + g + ")";
  };
  const applySgr = (style, params) => {
    const p = params.length ? params.split(";").map((x) => parseInt(x || "0", 10)) : [0];
    for (let i = 0; i < p.length; i++) {
      const c = p[i];
      if (c === 0) { style.fg = style.bg = null; style.b = style.i = style.u = style.inv = style.dim = false; }
      else if (c === 1) style.b = true; else if (c === 2) style.dim = true; else if (c === 3) style.i = true;
      else if (c === 4) style.u = true; else if (c === 7) style.inv = true;
      else if (c === 22) style.b = style.dim = false; else if (c === 23) style.i = false;
      else if (c === 24) style.u = false; else if (c === 27) style.inv = false;
      else if (c >= 30 && c <= 37) style.fg = PALETTE[c - 30]; else if (c === 39) style.fg = null;
      else if (c >= 40 && c <= 47) style.bg = PALETTE[c - 40]; else if (c === 49) style.bg = null;
      else if (c >= 90 && c <= 97) style.fg = PALETTE[c - 82]; else if (c >= 100 && c <= 107) style.bg = PALETTE[c - 92];
      else if ((c === 38 || c === 48) && p[i + 1] === 5) { style[c === 38 ? "fg" : "bg"] = color256(p[i + 2] || 0); i += 2; }
      else if ((c === 38 || c === 48) && p[i + 1] === 2) {
        style[c === 38 ? "fg" : "bg"] = "rgb(" + [p[i + 2], p[i + 3], p[i + 4]].map((v) => v || 0).join(",") + ")"; i += 4;
      }
    }
  };
  // control bytes as C escapes (any font has them, unlike the U+2400 control pictures)
  const CTL_NAMES = { 0: "\\0", 7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r", 27: "\\e" };
  const CTL_GLYPH = (code) => CTL_NAMES[code] || "\\x" + code.toString(16).padStart(2, "0");
  // ESC sequences: CSI, OSC/DCS/... strings (to BEL or ST), two-byte escapes
  const ESC_RE = /\x1b(?:\[([0-?]*)([ -\/]*)([@-~])|[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -\/]*[0-~])?/g;
  const CTL_RE = /[\x00-\x08\x0b-\x1f\x7f]|\r|\n|\t/;
  function pushText(parent, text, style) {
    if (!text) return;
    let node;
    if (style && (style.fg || style.bg || style.b || style.i || style.u || style.inv || style.dim)) {
      node = el("span");
      let fg = style.fg, bg = style.bg;
      if (style.inv) { const x = fg; fg = bg || "#fff"; bg = x || "#1d232a"; }
      if (fg) node.style.color = fg;
      if (bg) node.style.backgroundColor = bg;
      if (style.b) node.style.fontWeight = "700";
      if (style.dim) node.style.opacity = "0.7";
      if (style.i) node.style.fontStyle = "italic";
      if (style.u) node.style.textDecoration = "underline";
      parent.appendChild(node);
    } else node = parent;
    // control bytes visible as their symbol glyphs; a line break keeps its glyph and breaks
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code < 0x20 || code === 0x7f) {
        if (i > start) node.appendChild(document.createTextNode(text.slice(start, i)));
        node.appendChild(el("span", "ctl", CTL_GLYPH(code)));
        start = i + 1;
      }
    }
    if (start < text.length) node.appendChild(document.createTextNode(text.slice(start)));
  }
  function renderText(parent, text, ansi) {
    const style = {};
    let last = 0, m;
    ESC_RE.lastIndex = 0;
    while ((m = ESC_RE.exec(text)) !== null) {
      pushText(parent, text.slice(last, m.index), style);
      last = ESC_RE.lastIndex;
      if (ansi !== "render") continue; // stripped: the sequence is dropped
      if (m[3] === "m" && !m[2]) applySgr(style, m[1]);
      else parent.appendChild(el("span", "esc", "\\e" + m[0].slice(1).replace(/[\x00-\x1f]/g, (c) => CTL_GLYPH(c.charCodeAt(0)))));
    }
    pushText(parent, text.slice(last), style);
  }
  const utf8 = new TextEncoder();
  const toHex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(" ");
  const spacedHex = (hex) => hex.replace(/(..)(?=.)/g, "$1 ");
  const plainOf = (row) => { // what search looks at: text without escapes, hex spaced, marker label
    if (row[3] === 1) return spacedHex(row[4]);
    if (row[3] === 2) return (row[2] + " " + row[4]).toLowerCase();
    return row[4].replace(ESC_RE, "").toLowerCase();
  };
  function markMatches(root, q) {
    if (!q) return;
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    for (const node of nodes) {
      const text = node.nodeValue, low = text.toLowerCase();
      let at = low.indexOf(q);
      if (at < 0) continue;
      const frag = document.createDocumentFragment();
      let last = 0;
      while (at >= 0) {
        frag.appendChild(document.createTextNode(text.slice(last, at)));
        frag.appendChild(el("mark", null, text.slice(at, at + q.length)));
        last = at + q.length;
        at = low.indexOf(q, last);
      }
      frag.appendChild(document.createTextNode(text.slice(last)));
      node.parentNode.replaceChild(frag, node);
    }
  }

  // --- transcript ---------------------------------------------------------------------------------
  const ts = $("transcript");
  const rowPages = Math.max(1, Math.ceil(ROWS.length / ROW_PAGE));
  function rowElement(i) {
    const r = ROWS[i];
    const div = el("div", "row " + r[1] + (r[3] === 1 ? " hex" : ""));
    div.dataset.i = i;
    div.appendChild(el("span", "ts", fmtT(r[0])));
    if (r[3] === 2) {
      div.appendChild(el("span", "dir", "\u25c6"));
      div.appendChild(el("span", "off", ""));
      const c = el("span", "c");
      c.appendChild(el("span", "badge", r[2]));
      c.appendChild(document.createTextNode(r[4]));
      div.appendChild(c);
      return div;
    }
    div.appendChild(el("span", "dir", r[1] === "r" ? "RX" : "TX"));
    div.appendChild(el("span", "off", "@" + r[2]));
    const c = el("span", "c");
    if (r[3] === 1) c.textContent = spacedHex(r[4]);
    else if ($("ts-hex").checked) c.textContent = toHex(utf8.encode(r[4]));
    else renderText(c, r[4], $("ts-ansi").value);
    div.appendChild(c);
    return div;
  }
  function renderRows() {
    const start = state.rowPage * ROW_PAGE, end = Math.min(ROWS.length, start + ROW_PAGE);
    const frag = document.createDocumentFragment();
    const q = state.query;
    const hitRow = state.hit >= 0 ? state.hits[state.hit] : -1;
    for (let i = start; i < end; i++) {
      const div = rowElement(i);
      if (i === state.selectedRow) div.classList.add("sel");
      if (i === hitRow) div.classList.add("hit");
      if (q) markMatches(div.lastChild, q);
      frag.appendChild(div);
    }
    ts.replaceChildren(frag);
    $("ts-page").textContent = "rows " + (ROWS.length ? start + 1 : 0) + "\u2013" + end + " of " + ROWS.length +
      " (page " + (state.rowPage + 1) + "/" + rowPages + ")";
  }
  function showRow(i, scroll) {
    if (i < 0 || i >= ROWS.length) return;
    state.selectedRow = i;
    state.rowPage = Math.floor(i / ROW_PAGE);
    renderRows();
    const div = ts.querySelector('[data-i="' + i + '"]');
    if (div && scroll !== false) div.scrollIntoView({ block: "center" });
  }
  function rowOfEvent(e) { // first row holding data event e
    let i = lowerBound(rowE, e + 1) - 1;
    while (i > 0 && rowE[i - 1] === e && ROWS[i - 1][1] !== "m") i--;
    while (i >= 0 && ROWS[i][1] === "m" && i + 1 < ROWS.length && rowE[i + 1] === e) i++;
    return Math.max(0, i);
  }
  const byDir = {};
  function dirRows(dir) { // rows of one direction and their stream positions, built on first use
    if (!byDir[dir]) {
      const idx = [], at = [];
      ROWS.forEach((r, i) => { if (r[1] === dir) { idx.push(i); at.push(r[2]); } });
      byDir[dir] = { idx: idx, at: at };
    }
    return byDir[dir];
  }
  const slotOf = (dir, pos) => lowerBound(dirRows(dir).at, pos + 1) - 1; // in dirRows(dir)
  function rowOfPosition(dir, pos) { // the row holding byte `pos` of direction `dir`
    const k = slotOf(dir, pos);
    return k >= 0 ? byDir[dir].idx[k] : -1;
  }
  ts.addEventListener("click", (ev) => {
    const div = ev.target.closest(".row");
    if (!div) return;
    const i = Number(div.dataset.i);
    state.selectedRow = i;
    ts.querySelectorAll(".row.sel").forEach((x) => x.classList.remove("sel"));
    div.classList.add("sel");
    focusTime(ROWS[i][0]);
  });
  $("ts-pp").onclick = () => { if (state.rowPage > 0) { state.rowPage--; renderRows(); ts.scrollTop = 0; } };
  $("ts-np").onclick = () => { if (state.rowPage < rowPages - 1) { state.rowPage++; renderRows(); ts.scrollTop = 0; } };
  $("ts-ansi").onchange = renderRows;
  $("ts-hex").onchange = renderRows;
  let plain = null;
  function runSearch(step) {
    const q = $("ts-search").value.toLowerCase();
    if (q !== state.query) {
      state.query = q;
      state.hits = [];
      state.hit = -1;
      if (q) {
        if (!plain) plain = ROWS.map(plainOf);
        for (let i = 0; i < plain.length; i++) if (plain[i].includes(q)) state.hits.push(i);
      }
    }
    if (!state.hits.length) {
      $("ts-count").textContent = q ? "no match" : "";
      renderRows();
      return;
    }
    if (state.hit < 0) { // first match at or after the selected row
      const from = Math.max(0, state.selectedRow);
      const k = lowerBound(state.hits, from);
      state.hit = k < state.hits.length ? k : 0;
      if (step < 0) state.hit = (state.hit - 1 + state.hits.length) % state.hits.length;
    } else state.hit = (state.hit + step + state.hits.length) % state.hits.length;
    $("ts-count").textContent = "match " + (state.hit + 1) + " of " + state.hits.length;
    const i = state.hits[state.hit];
    showRow(i);
    focusTime(ROWS[i][0]);
  }
  $("ts-search").addEventListener("keydown", (ev) => { if (ev.key === "Enter") { ev.preventDefault(); runSearch(ev.shiftKey ? -1 : 1); } });
  $("ts-search").addEventListener("search", () => { if (!$("ts-search").value) runSearch(1); });
  $("ts-next").onclick = () => runSearch(1);
  $("ts-prev").onclick = () => runSearch(-1);

  // --- frames (columns; a frame's bytes are read from the transcript rows) ---------------------
  const frBody = document.querySelector("#frames tbody");
  const FN = FR ? FR.t.length : 0;
  const frData = new Map(FR ? FR.data.map((d) => [d[0], d]) : []);
  const frNotes = new Map(FR ? FR.notes : []);
  const utf8Strict = new TextDecoder("utf-8", { fatal: true });
  const hexBytes = (hex) => { const b = new Uint8Array(hex.length / 2); for (let i = 0; i < b.length; i++) b[i] = parseInt(hex.substr(2 * i, 2), 16); return b; };
  const rowBytes = (r) => r[3] === 1 ? hexBytes(r[4]) : utf8.encode(r[4]);
  function wireBytes(dir, off, len) { // bytes [off, off+len) of one direction, from its rows
    const out = new Uint8Array(len);
    const d = dirRows(dir);
    let j = slotOf(dir, off), got = 0;
    while (got < len && j >= 0 && j < d.idx.length) {
      const r = ROWS[d.idx[j]], b = rowBytes(r), from = Math.max(0, off + got - r[2]);
      const part = b.subarray(from, Math.min(b.length, from + len - got));
      out.set(part, got);
      got += part.length;
      j++;
    }
    return out.subarray(0, got);
  }
  function frameCell(td, i) {
    const own = frData.get(i);
    if (FR.valid[i] === "e") { td.textContent = frNotes.get(i) || "framing error"; return; }
    let bytes;
    if (own) { if (own[1] === "h") { td.textContent = spacedHex(own[2]); return; } bytes = utf8.encode(own[2]); }
    else bytes = wireBytes(FR.dir[i], FR.off[i], FR.len[i]);
    let text = null;
    try { text = utf8Strict.decode(bytes); } catch (e) { text = null; }
    if (text === null) td.textContent = toHex(bytes);
    else renderText(td, text.replace(/\r?\n$/, ""), "strip");
  }
  let frIndex = [];
  function filterFrames() {
    const kind = $("fr-kind").value, badOnly = $("fr-bad").checked;
    const k = kind === "" ? -1 : Number(kind);
    frIndex = [];
    for (let i = 0; i < FN; i++) {
      if ((k < 0 || FR.kind[i] === k) && (!badOnly || FR.valid[i] === "0")) frIndex.push(i);
    }
    state.frPage = 0;
    renderFrames();
  }
  function renderFrames() {
    const pages = Math.max(1, Math.ceil(frIndex.length / FRAME_PAGE));
    const start = state.frPage * FRAME_PAGE, end = Math.min(frIndex.length, start + FRAME_PAGE);
    const frag = document.createDocumentFragment();
    for (let n = start; n < end; n++) {
      const i = frIndex[n], v = FR.valid[i];
      const tr = el("tr", v === "e" ? "err" : v === "0" ? "bad" : "");
      tr.dataset.i = i;
      if (i === state.frSelected) tr.classList.add("sel");
      tr.appendChild(el("td", null, String(i + 1)));
      tr.appendChild(el("td", null, fmtT(FR.t[i])));
      tr.appendChild(el("td", null, FR.dir[i] === "r" ? "RX" : "TX"));
      tr.appendChild(el("td", null, String(FR.off[i])));
      tr.appendChild(el("td", null, FR.kinds[FR.kind[i]]));
      tr.appendChild(el("td", "chk", v === "1" ? "\u2713 ok" : v === "0" ? "\u2717 bad" : "\u2013"));
      const data = el("td", "data");
      frameCell(data, i);
      tr.appendChild(data);
      tr.appendChild(el("td", "parsed", v === "e" ? "" : frNotes.get(i) || ""));
      frag.appendChild(tr);
    }
    frBody.replaceChildren(frag);
    $("fr-page").textContent = (frIndex.length ? start + 1 : 0) + "\u2013" + end + " of " + frIndex.length +
      " (page " + (state.frPage + 1) + "/" + pages + ")";
  }
  if (FR) {
    const counts = $("fr-counts");
    counts.appendChild(document.createTextNode(FN + " frames \u00b7 "));
    counts.appendChild(el("span", FR.bad ? "bad" : "", FR.bad + " bad"));
    counts.appendChild(document.createTextNode(" \u00b7 " + FR.errors + " framing errors" +
      (FR.would_drop ? " (decode drops the " + FR.would_drop + " bad)" : "")));
    counts.dataset.bad = FR.bad;
    const sel = $("fr-kind");
    sel.appendChild(el("option", null, "all kinds (" + FN + ")")).value = "";
    FR.kinds.map((name, k) => [name, k, FR.kind_counts[k]]).sort((a, b) => b[2] - a[2]).forEach(([name, k, n]) => {
      const option = el("option", null, name + " (" + n + ")");
      option.value = String(k);
      option.dataset.kind = name;
      sel.appendChild(option);
    });
    sel.onchange = filterFrames;
    $("fr-bad").onchange = filterFrames;
    $("fr-pp").onclick = () => { if (state.frPage > 0) { state.frPage--; renderFrames(); } };
    $("fr-np").onclick = () => {
      if ((state.frPage + 1) * FRAME_PAGE < frIndex.length) { state.frPage++; renderFrames(); }
    };
    frBody.addEventListener("click", (ev) => {
      const tr = ev.target.closest("tr");
      if (!tr) return;
      const i = Number(tr.dataset.i);
      state.frSelected = i;
      frBody.querySelectorAll("tr.sel").forEach((x) => x.classList.remove("sel"));
      tr.classList.add("sel");
      const row = rowOfPosition(FR.dir[i], FR.off[i]);
      if (row >= 0) showRow(row);
      focusTime(FR.t[i]);
    });
    filterFrames();
  } else {
    document.querySelector("#frames-panel .table-wrap").hidden = true;
    $("fr-none").hidden = false;
    document.querySelectorAll("#frames-panel .toolbar > :not(h2)").forEach((x) => { x.hidden = true; });
  }

  // --- timeline -----------------------------------------------------------------------------------
  const canvas = $("timeline"), tip = $("tl-tip");
  const ctx = canvas.getContext("2d");
  const LANE = { mk: [4, 30], tx: [34, 84], rx: [90, 140], axis: 146 };
  let cols = null; // last draw's columns, for hover and click
  $("tl-gap").textContent = String(META.gap_s);
  canvas.dataset.events = N;
  canvas.dataset.rxEvents = rxEvents;
  canvas.dataset.txEvents = N - rxEvents;
  canvas.dataset.markers = TL.markers.length;
  canvas.dataset.gaps = TL.gaps.length;
  const xOf = (t, W) => (t - state.t0) / (state.t1 - state.t0) * W;
  const tOf = (x, W) => state.t0 + x / W * (state.t1 - state.t0);
  function niceStep(span, target) {
    const raw = span / target, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  }
  let drawPending = false;
  function requestDraw() {
    if (drawPending) return;
    drawPending = true;
    requestAnimationFrame(() => { drawPending = false; drawTimeline(); drawPlots(); });
  }
  function drawTimeline() {
    const dpr = window.devicePixelRatio || 1;
    const cssW = canvas.clientWidth || 800, cssH = canvas.clientHeight || 170;
    if (canvas.width !== Math.round(cssW * dpr) || canvas.height !== Math.round(cssH * dpr)) {
      canvas.width = Math.round(cssW * dpr);
      canvas.height = Math.round(cssH * dpr);
    }
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const W = cssW;
    ctx.clearRect(0, 0, W, cssH);
    ctx.font = "11px ui-monospace, monospace";
    ctx.textBaseline = "middle";
    // gaps
    let gaps = 0;
    for (const [a, b] of TL.gaps) {
      if (b < state.t0 || a > state.t1) continue;
      const x0 = Math.max(0, xOf(a, W)), x1 = Math.min(W, xOf(b, W));
      gaps++;
      ctx.fillStyle = "#eceff2";
      ctx.fillRect(x0, LANE.tx[0], Math.max(1, x1 - x0), LANE.rx[1] - LANE.tx[0]);
      const label = fmtDur(b - a);
      const w = ctx.measureText(label).width;
      if (x1 - x0 > w + 6) {
        ctx.fillStyle = "#5f6b77";
        ctx.textAlign = "center";
        ctx.fillText(label, (x0 + x1) / 2, (LANE.tx[1] + LANE.rx[0]) / 2);
      }
    }
    state.drawnGaps = gaps;
    // lane labels and baselines
    ctx.textAlign = "left";
    ctx.fillStyle = "#9aa4ae";
    ctx.fillText("TX", 4, LANE.tx[0] + 8);
    ctx.fillText("RX", 4, LANE.rx[0] + 8);
    ctx.strokeStyle = "#d8dde3";
    ctx.beginPath();
    ctx.moveTo(0, LANE.tx[1] + 0.5); ctx.lineTo(W, LANE.tx[1] + 0.5);
    ctx.moveTo(0, LANE.rx[1] + 0.5); ctx.lineTo(W, LANE.rx[1] + 0.5);
    ctx.stroke();
    // events aggregated per pixel column; a mark's height grows with its bytes
    const C = Math.max(1, Math.ceil(W));
    cols = { W: W, rx: new Float64Array(C), tx: new Float64Array(C), rxn: new Uint32Array(C), txn: new Uint32Array(C),
      rxe: new Int32Array(C).fill(-1), txe: new Int32Array(C).fill(-1) };
    const i0 = lowerBound(TL.t, state.t0), i1 = lowerBound(TL.t, state.t1 + 1e-9);
    for (let i = i0; i < i1; i++) {
      const x = Math.min(C - 1, Math.max(0, Math.floor(xOf(TL.t[i], W))));
      if (TL.dir.charCodeAt(i) === 114) { cols.rx[x] += TL.n[i]; cols.rxn[x]++; if (cols.rxe[x] < 0) cols.rxe[x] = i; }
      else { cols.tx[x] += TL.n[i]; cols.txn[x]++; if (cols.txe[x] < 0) cols.txe[x] = i; }
    }
    state.drawnEvents = i1 - i0;
    let max = 1;
    for (let x = 0; x < C; x++) max = Math.max(max, cols.rx[x], cols.tx[x]);
    const pxPerS = W / (state.t1 - state.t0);
    const wire = baud ? bitsPerChar / baud * pxPerS : 0; // px per byte on the wire
    let drawn = 0;
    for (const [lane, bytes, color] of [[LANE.tx, cols.tx, "#d9650b"], [LANE.rx, cols.rx, "#1f6fb4"]]) {
      ctx.fillStyle = color;
      const H = lane[1] - lane[0] - 4;
      for (let x = 0; x < C; x++) {
        if (!bytes[x]) continue;
        const h = Math.max(2, Math.sqrt(bytes[x] / max) * H);
        ctx.fillRect(x, lane[1] - h, Math.max(1, Math.min(bytes[x] * wire, W - x)), h);
        drawn++;
      }
    }
    state.drawnColumns = drawn;
    // markers: a line through the lanes, a diamond in the marker lane, a label where there is room
    let lastLabelEnd = -1, markers = 0;
    ctx.textAlign = "left";
    for (const [t, kind, label] of TL.markers) {
      if (t < state.t0 || t > state.t1) continue;
      markers++;
      const x = xOf(t, W), color = MARK_COLORS[kind] || "#8d6e00";
      ctx.strokeStyle = color;
      ctx.globalAlpha = 0.55;
      ctx.beginPath(); ctx.moveTo(x + 0.5, LANE.mk[1]); ctx.lineTo(x + 0.5, LANE.rx[1]); ctx.stroke();
      ctx.globalAlpha = 1;
      ctx.fillStyle = color;
      ctx.beginPath();
      ctx.moveTo(x, LANE.mk[1] - 12); ctx.lineTo(x + 5, LANE.mk[1] - 7); ctx.lineTo(x, LANE.mk[1] - 2); ctx.lineTo(x - 5, LANE.mk[1] - 7);
      ctx.fill();
      const w = ctx.measureText(label).width;
      if (x + 7 > lastLabelEnd && x + 7 + w < W) {
        ctx.fillText(label, x + 7, LANE.mk[1] - 7);
        lastLabelEnd = x + 7 + w + 8;
      }
    }
    state.drawnMarkers = markers;
    // cursor
    if (state.cursor !== null && state.cursor >= state.t0 && state.cursor <= state.t1) {
      const x = xOf(state.cursor, W);
      ctx.strokeStyle = "#d62728";
      ctx.beginPath(); ctx.moveTo(x + 0.5, 0); ctx.lineTo(x + 0.5, LANE.axis - 4); ctx.stroke();
    }
    // time axis
    ctx.strokeStyle = "#c5ccd3";
    ctx.fillStyle = "#687380";
    ctx.textAlign = "center";
    const step = niceStep(state.t1 - state.t0, Math.max(2, W / 110));
    const digits = Math.max(0, -Math.floor(Math.log10(step)));
    for (let t = Math.ceil(state.t0 / step) * step; t <= state.t1; t += step) {
      const x = xOf(t, W);
      ctx.beginPath(); ctx.moveTo(x + 0.5, LANE.axis - 4); ctx.lineTo(x + 0.5, LANE.axis); ctx.stroke();
      ctx.fillText(t.toFixed(digits) + "s", x, LANE.axis + 10);
    }
    canvas.dataset.drawnEvents = state.drawnEvents;
    canvas.dataset.drawnColumns = state.drawnColumns;
    canvas.dataset.drawnMarkers = markers;
    canvas.dataset.drawnGaps = gaps;
    $("tl-range").textContent = fmtT(Math.max(0, state.t0)) + " \u2013 " + fmtT(Math.min(duration, state.t1)) +
      " s \u00b7 " + state.drawnEvents + " of " + N + " events in view";
  }
  function setView(t0, t1) {
    const full = duration * 1.02, minSpan = 1e-5;
    let span = Math.min(Math.max(t1 - t0, minSpan), full);
    const lo = -duration * 0.01, hi = duration * 1.01;
    if (t0 < lo) t0 = lo;
    if (t0 + span > hi) t0 = hi - span;
    state.t0 = t0; state.t1 = t0 + span;
    requestDraw();
  }
  function zoom(factor, atT) {
    const a = atT === undefined ? (state.t0 + state.t1) / 2 : atT;
    setView(a - (a - state.t0) * factor, a + (state.t1 - a) * factor);
  }
  function focusTime(t) {
    state.cursor = t;
    if (t < state.t0 || t > state.t1) {
      const span = state.t1 - state.t0;
      setView(t - span / 2, t + span / 2);
    } else requestDraw();
  }
  $("tl-fit").onclick = () => setView(-duration * 0.01, duration * 1.01);
  $("tl-in").onclick = () => zoom(0.5, state.cursor === null ? undefined : state.cursor);
  $("tl-out").onclick = () => zoom(2);
  canvas.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const r = canvas.getBoundingClientRect();
    zoom(Math.exp(ev.deltaY * 0.0015), tOf(ev.clientX - r.left, r.width));
  }, { passive: false });
  let drag = null;
  canvas.addEventListener("pointerdown", (ev) => {
    drag = { x: ev.clientX, t0: state.t0, t1: state.t1, moved: false };
    canvas.setPointerCapture(ev.pointerId);
  });
  canvas.addEventListener("pointermove", (ev) => {
    const r = canvas.getBoundingClientRect();
    if (drag) {
      const dx = ev.clientX - drag.x;
      if (Math.abs(dx) > 3) drag.moved = true;
      if (drag.moved) {
        canvas.classList.add("dragging");
        const dt = dx / r.width * (drag.t1 - drag.t0);
        setView(drag.t0 - dt, drag.t1 - dt);
      }
      return;
    }
    hover(ev.clientX - r.left, ev.clientY - r.top);
  });
  canvas.addEventListener("pointerup", (ev) => {
    const was = drag;
    drag = null;
    canvas.classList.remove("dragging");
    if (was && !was.moved) {
      const r = canvas.getBoundingClientRect();
      pick(ev.clientX - r.left, ev.clientY - r.top);
    }
  });
  canvas.addEventListener("pointerleave", () => { tip.hidden = true; });
  function laneAt(y) {
    return y < LANE.mk[1] + 2 ? "mk" : y < (LANE.tx[1] + LANE.rx[0]) / 2 ? "tx" : y < LANE.rx[1] + 4 ? "rx" : null;
  }
  function nearestColumn(lane, x) { // the closest non-empty column within 6 px
    if (!cols) return -1;
    const arr = cols[lane];
    for (let d = 0; d <= 6; d++) {
      for (const c of [Math.floor(x) - d, Math.floor(x) + d]) if (c >= 0 && c < arr.length && arr[c]) return c;
    }
    return -1;
  }
  function nearestMarker(x, W) {
    let best = -1, bestD = 8;
    TL.markers.forEach((m, k) => { const d = Math.abs(xOf(m[0], W) - x); if (d < bestD) { bestD = d; best = k; } });
    return best;
  }
  function hover(x, y) {
    const lane = laneAt(y), W = canvas.clientWidth;
    let text = null;
    if (lane === "mk") {
      const k = nearestMarker(x, W);
      if (k >= 0) text = fmtT(TL.markers[k][0]) + " s\n" + TL.markers[k][1] + ": " + TL.markers[k][2];
    } else if (lane) {
      const c = nearestColumn(lane, x);
      if (c >= 0) {
        text = lane.toUpperCase() + " at " + fmtT(tOf(c, W)) + " s\n" + cols[lane][c] + " bytes in " +
          cols[lane + "n"][c] + " event(s)";
      }
    }
    if (text === null) { tip.hidden = true; return; }
    tip.textContent = text;
    tip.hidden = false;
    tip.style.left = Math.min(x + 12, W - 220) + "px";
    tip.style.top = (y + 12) + "px";
  }
  function pick(x, y) {
    const lane = laneAt(y), W = canvas.clientWidth;
    if (lane === "mk") {
      const k = nearestMarker(x, W);
      if (k >= 0) { showRow(markerRows[k]); focusTime(TL.markers[k][0]); }
      return;
    }
    if (!lane) return;
    const c = nearestColumn(lane, x);
    if (c < 0) { focusTime(tOf(x, W)); return; }
    const e = cols[lane + "e"][c];
    showRow(rowOfEvent(e));
    focusTime(TL.t[e]);
  }
  window.addEventListener("resize", requestDraw);

  // --- plots --------------------------------------------------------------------------------------
  const SVG = "http://www.w3.org/2000/svg";
  const svgEl = (tag, attrs) => {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  };
  const plots = [];
  if (!SERIES.length) {
    $("pl-note").textContent = FR ? "no numeric fields that vary" + ((META.series_available || []).length ?
      " (available: " + META.series_available.join(", ") + "; pick with --fields)" : "") :
      "decode with a protocol to plot parsed values";
  } else {
    $("pl-note").textContent = "x axis follows the timeline's zoom; click a point to find it in the transcript" +
      ((META.series_available || []).length > SERIES.length ? " \u00b7 more with --fields: " + META.series_available.join(", ") : "");
  }
  SERIES.forEach((s) => {
    const box = el("div", "plot");
    const h = el("h3", null, s.name + " ");
    let lo = Infinity, hi = -Infinity;
    for (const v of s.v) { if (v < lo) lo = v; if (v > hi) hi = v; }
    h.appendChild(el("span", null, s.v.length + " points, " + lo + " \u2026 " + hi));
    box.appendChild(h);
    const svg = svgEl("svg", { "data-name": s.name, "data-points": s.v.length, role: "img" });
    box.appendChild(svg);
    $("plots").appendChild(box);
    if (lo === hi) { lo -= 1; hi += 1; }
    const pad = (hi - lo) * 0.08;
    plots.push({ s: s, svg: svg, lo: lo - pad, hi: hi + pad });
    svg.addEventListener("click", (ev) => {
      const r = svg.getBoundingClientRect();
      const t = state.t0 + (ev.clientX - r.left - 44) / (r.width - 52) * (state.t1 - state.t0);
      const k = Math.min(s.t.length - 1, lowerBound(s.t, t));
      const row = Math.min(ROWS.length - 1, lowerBound(rowT, s.t[k]));
      if (row >= 0) showRow(row);
      focusTime(s.t[k]);
    });
  });
  function drawPlots() {
    for (const p of plots) {
      const svg = p.svg, W = svg.clientWidth || 420, H = svg.clientHeight || 170;
      const L = 44, R = 8, T = 8, B = 18, iw = W - L - R, ih = H - T - B;
      svg.setAttribute("viewBox", "0 0 " + W + " " + H);
      svg.replaceChildren();
      const X = (t) => L + (t - state.t0) / (state.t1 - state.t0) * iw;
      const Y = (v) => T + (1 - (v - p.lo) / (p.hi - p.lo)) * ih;
      const vstep = niceStep(p.hi - p.lo, 4);
      for (let v = Math.ceil(p.lo / vstep) * vstep; v <= p.hi; v += vstep) {
        svg.appendChild(svgEl("line", { "class": "grid", x1: L, x2: W - R, y1: Y(v), y2: Y(v) }));
        const label = svgEl("text", { x: L - 4, y: Y(v) + 3, "text-anchor": "end" });
        label.textContent = Math.abs(v) < 1e-9 ? "0" : Number(v.toPrecision(6)).toString();
        svg.appendChild(label);
      }
      const tstep = niceStep(state.t1 - state.t0, Math.max(2, iw / 90));
      for (let t = Math.ceil(state.t0 / tstep) * tstep; t <= state.t1; t += tstep) {
        const label = svgEl("text", { x: X(t), y: H - 5, "text-anchor": "middle" });
        label.textContent = Number(t.toPrecision(8)) + "s";
        svg.appendChild(label);
      }
      svg.appendChild(svgEl("line", { "class": "axis", x1: L, x2: L, y1: T, y2: T + ih }));
      svg.appendChild(svgEl("line", { "class": "axis", x1: L, x2: W - R, y1: T + ih, y2: T + ih }));
      const k0 = lowerBound(p.s.t, state.t0), k1 = lowerBound(p.s.t, state.t1 + 1e-9);
      const pts = [];
      let dots = 0;
      if (k1 - k0 <= MAX_DOTS) {
        for (let k = k0; k < k1; k++) pts.push(X(p.s.t[k]).toFixed(1) + "," + Y(p.s.v[k]).toFixed(1));
        for (let k = k0; k < k1; k++) {
          const c = svgEl("circle", { "class": "pt", cx: X(p.s.t[k]).toFixed(1), cy: Y(p.s.v[k]).toFixed(1), r: 2.2 });
          const title = svgEl("title", {});
          title.textContent = fmtT(p.s.t[k]) + " s: " + p.s.v[k];
          c.appendChild(title);
          svg.appendChild(c);
          dots++;
        }
      } else { // min/max per pixel column keeps the shape of a long series
        let col = -1, mn = 0, mx = 0;
        const flush = () => { if (col >= 0) pts.push(col + "," + Y(mn).toFixed(1), col + "," + Y(mx).toFixed(1)); };
        for (let k = k0; k < k1; k++) {
          const c = Math.round(X(p.s.t[k])), v = p.s.v[k];
          if (c !== col) { flush(); col = c; mn = mx = v; } else { if (v < mn) mn = v; if (v > mx) mx = v; }
        }
        flush();
      }
      if (pts.length > 1) svg.insertBefore(svgEl("polyline", { "class": "line", points: pts.join(" ") }), svg.firstChild);
      if (state.cursor !== null && state.cursor >= state.t0 && state.cursor <= state.t1) {
        svg.appendChild(svgEl("line", { "class": "cursor", x1: X(state.cursor), x2: X(state.cursor), y1: T, y2: T + ih }));
      }
      svg.dataset.drawnPoints = k1 - k0;
      svg.dataset.dots = dots;
    }
  }

  renderRows();
  drawTimeline();
  drawPlots();
  document.body.dataset.ready = "1";
})();
