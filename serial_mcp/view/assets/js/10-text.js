/* Part 1: a row's text as DOM: ANSI SGR colours rendered or stripped, other escapes and control
 * bytes visible as C escapes; hex; search highlighting. */
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
