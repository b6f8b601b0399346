/* Part 4: the timeline canvas: lanes aggregated per pixel column, gaps, markers, zoom and pan. */
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
  const ticks = axisTicks(state.t0, state.t1, Math.max(2, W / 110));
  const gap = ticks.length > 1 ? ticks[1] - ticks[0] : 1;
  const digits = Math.min(20, Math.max(0, -Math.floor(Math.log10(gap)))); // toFixed takes 0 to 100
  for (const t of ticks) {
    const x = xOf(t, W);
    ctx.beginPath(); ctx.moveTo(x + 0.5, LANE.axis - 4); ctx.lineTo(x + 0.5, LANE.axis); ctx.stroke();
    ctx.fillText(t.toFixed(digits) + "s", x, LANE.axis + 10);
  }
  canvas.dataset.ticks = ticks.length;
  canvas.dataset.drawnEvents = state.drawnEvents;
  canvas.dataset.drawnColumns = state.drawnColumns;
  canvas.dataset.drawnMarkers = markers;
  canvas.dataset.drawnGaps = gaps;
  $("tl-range").textContent = fmtT(Math.max(0, state.t0)) + " \u2013 " + fmtT(Math.min(duration, state.t1)) +
    " s \u00b7 " + state.drawnEvents + " of " + N + " events in view";
}
function setView(t0, t1) {
  // the narrowest view is 10 us, or far from zero many floats wide (at 1e17 s they are 16 s apart)
  const full = duration * 1.02, minSpan = Math.max(1e-5, duration * 1e-12);
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
    if (k >= 0) {
      const m = TL.markers[k]; // a decoded crash has its frames as a fourth item (--elf)
      text = fmtT(m[0]) + " s\n" + m[1] + ": " + m[2] + (m[3] ? "\n" + m[3].join("\n") : "");
    }
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
  showRow(rowOfPosition(TL.dir[e], TL.pos[e])); // the row holding the event's first byte
  focusTime(TL.t[e]);
}
window.addEventListener("resize", requestDraw);
