/* Part 3: the frame table (columns; a frame's bytes come from the transcript rows). */
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
    (FR.would_drop ? " (decode drops the " + FR.would_drop + " bad)" : "") +
    (META.print_filter != null ? " \u00b7 " + FR.filtered + " hidden by --print-filter " + META.print_filter : "")));
  counts.dataset.bad = FR.bad;
  counts.dataset.filtered = FR.filtered;
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
    const i = selectClicked(ev, frBody, "tr");
    if (i < 0) return;
    state.frSelected = i;
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
