/* serial-mcp capture view, part 0: the data, shared helpers and state.
 * The parts (assets/js/*.js, in name order) are concatenated into one function scope by
 * view/render.py. Plain JS, no library. Reads the JSON in #view-data (layout: the docstrings of
 * serial_mcp/view/*.py); window.serialView exposes data, state and drawn counts (tests read them). */
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
