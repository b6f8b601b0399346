/* Part 5: SVG plots of numeric series; the x axis follows the timeline's view. */
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
  if (lo === hi) { const d = Math.max(1, Math.abs(lo) * 1e-9); lo -= d; hi += d; } // 1e17 - 1 is 1e17
  const pad = (hi / 2 - lo / 2) * 0.16; // halves: hi - lo overflows for values near the float limit
  plots.push({ s: s, svg: svg, lo: Math.max(-Number.MAX_VALUE, lo - pad), hi: Math.min(Number.MAX_VALUE, hi + pad) });
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
    const Y = (v) => T + (1 - (v / 2 - p.lo / 2) / (p.hi / 2 - p.lo / 2)) * ih;
    const vticks = axisTicks(p.lo, p.hi, 4);
    for (const v of vticks) {
      svg.appendChild(svgEl("line", { "class": "grid", x1: L, x2: W - R, y1: Y(v), y2: Y(v) }));
      const label = svgEl("text", { x: L - 4, y: Y(v) + 3, "text-anchor": "end" });
      label.textContent = tickLabel(v, vticks);
      svg.appendChild(label);
    }
    const tticks = axisTicks(state.t0, state.t1, Math.max(2, iw / 90));
    for (const t of tticks) {
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
