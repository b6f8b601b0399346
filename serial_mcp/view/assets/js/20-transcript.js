/* Part 2: the transcript: pages of rows, lookups by stream position, search over all rows. */
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
  // scroll the transcript only, never the page (the timeline stays where the reader put it)
  if (div && scroll !== false) ts.scrollTop = Math.max(0, div.offsetTop - ts.clientHeight / 2);
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
  const i = selectClicked(ev, ts, ".row");
  if (i < 0) return;
  state.selectedRow = i;
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
