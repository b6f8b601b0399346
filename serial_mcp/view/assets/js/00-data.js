/* serial-mcp capture view, part 0: the data, shared helpers and state.
 * The parts (assets/js/*.js, in name order) are concatenated into one function scope by
 * view/render.py. Plain JS, no library. Reads the JSON in #view-data (layout: the docstrings of
 * serial_mcp/view/*.py); window.serialView exposes data, state, drawn counts and axisTicks (tests
 * read and call them). */
const D = JSON.parse(document.getElementById("view-data").textContent);
const META = D.meta, TL = D.timeline, ROWS = D.rows, FR = D.frames, SERIES = D.series || [];
const N = TL.t.length;
const ROW_PAGE = 400, FRAME_PAGE = 250, MAX_DOTS = 2000;
const MARK_COLORS = {
  control: "#7b4fc9", "break": "#c62828", config: "#00838f", respond: "#2e7d32", open: "#607d8b",
  close: "#607d8b", error: "#b71c1c", reconnect: "#ad1457", lost: "#e91e63", marker: "#8d6e00",
  boot: "#1565c0", reset: "#ef6c00", crash: "#d50000", boot_loop: "#aa00ff",  // detected events (issue 24)
};
const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};
const selectClicked = (ev, box, what) => { // a click on a `what` in `box`: it becomes the one selected; its data-i
  const hit = ev.target.closest(what);
  if (!hit) return -1;
  box.querySelectorAll(what + ".sel").forEach((x) => x.classList.remove("sel"));
  hit.classList.add("sel");
  return Number(hit.dataset.i);
};
const lowerBound = (arr, x) => { // first index with arr[i] >= x
  let lo = 0, hi = arr.length;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (arr[mid] < x) lo = mid + 1; else hi = mid; }
  return lo;
};
/* Axis ticks: a "nice" step (1, 2 or 5 times a power of ten) and the multiples of it inside [lo, hi],
 * found by an integer index, never by adding the step to a float: at 1e17 floats are 16 apart and
 * v += 2 would never move. At most AXIS_MAX_TICKS of them, each a distinct float (a step below the
 * floats' resolution there gives the floats there, once each). A span of zero gives [lo]; one the
 * step underflows (denormals) gives [lo, hi]; a span that is not a finite lo <= hi gives none. */
const AXIS_MAX_TICKS = 100;
function niceStep(span, target) { // [multiplier, exponent]: the step is m * 10^e; null if none
  const raw = span / target, e = Math.floor(Math.log10(raw));
  if (!(e >= -308 && e <= 308)) return null; // 10^e and 10^-e both finite floats
  const m = raw / Math.pow(10, e);
  return [m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10, e];
}
function axisTicks(lo, hi, target) {
  if (!(isFinite(lo) && isFinite(hi) && lo <= hi)) return [];
  if (lo === hi) return [lo];
  const want = target > 1 ? Math.min(target, AXIS_MAX_TICKS / 2) : 1;
  const nice = niceStep(hi / 2 - lo / 2, want / 2); // halves: hi - lo may overflow
  const step = nice ? nice[0] * Math.pow(10, nice[1]) : NaN;
  if (!(step > 0 && isFinite(step))) return [lo, hi];
  const first = Math.ceil(lo / step), count = Math.floor(hi / step) - first + 1;
  const scale = nice[1] < 0 ? Math.pow(10, -nice[1]) : 0; // divide by 10^-e: 0.3, not 3 * 0.1
  const out = [];
  for (let i = 0; i < Math.min(count, AXIS_MAX_TICKS); i++) {
    const k = (first + i) * nice[0];
    const v = scale ? k / scale : k * Math.pow(10, nice[1]);
    if (v >= lo && v <= hi && (!out.length || v > out[out.length - 1])) out.push(v);
  }
  return out.length ? out : [lo, hi];
}
function tickLabel(v, ticks) { // enough digits to tell this tick from its neighbours
  const n = ticks.length, half = n > 1 ? (ticks[n - 1] / 2 - ticks[0] / 2) / (n - 1) : 0; // half a gap
  if (half > 0 && Math.abs(v) / 2 < half * 1e-6) return "0"; // a rounding error's worth off zero
  const scale = Math.max(Math.abs(ticks[0]), Math.abs(ticks[n - 1])) / 2 / half;
  const need = half > 0 && isFinite(scale) ? Math.ceil(Math.log10(scale)) + 1 : 6;
  return Number(v.toPrecision(Math.min(17, Math.max(6, need)))).toString();
}
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
  rows: ROWS.length, errors: [], axisTicks: axisTicks,
};
