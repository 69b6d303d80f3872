// Module runs: which text nodes are runs, their boxes for the shots (mode layout), and the
// verdict each read applies (the pixels', or the paint heuristics when pixels are off).
  const vw = window.innerWidth || root.clientWidth || 1280;
  const sx = window.scrollX, sy = window.scrollY;
  const MIN_FONT = opts.minFontPx || 6;
  const PARA = new Set(['p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'table', 'dl', 'ul', 'ol', 'pre', 'blockquote', 'section', 'article', 'header', 'footer', 'nav', 'main', 'aside', 'form', 'figure']);
  const SKIP = new Set(['script', 'style', 'template', 'noscript', 'head', 'title', 'meta', 'link', 'base',
    'input', 'textarea', 'select', 'option', 'optgroup', 'datalist', 'object', 'embed', 'canvas', 'audio',
    'video', 'img', 'picture', 'source', 'track', 'map', 'area', 'param', 'iframe', 'frame', 'frameset']);

  const styles = new Map();
  const cs = (el) => {
    let s = styles.get(el);
    if (!s) { s = getComputedStyle(el); styles.set(el, s); }
    return s;
  };
  // Parent in the flat tree: the slot a node is assigned to, else the parent element, else the
  // shadow host.
  const flatParent = (n) => {
    if (n.assignedSlot) return n.assignedSlot;
    const p = n.parentNode;
    if (!p) return null;
    if (p.nodeType === 11) return p.host || null;
    return p.nodeType === 1 ? p : null;
  };
  const parseColor = (c) => {
    const m = /^rgba?\(\s*([\d.]+)[\s,]+([\d.]+)[\s,]+([\d.]+)(?:[\s,/]+([\d.]+%?))?\s*\)$/.exec(c || '');
    if (!m) return null;
    let a = m[4] === undefined ? 1 : (m[4].endsWith('%') ? parseFloat(m[4]) / 100 : parseFloat(m[4]));
    return { r: +m[1], g: +m[2], b: +m[3], a };
  };
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  };
  const contrast = (a, b) => {
    const la = lum(a), lb = lum(b);
    return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
  };

  // Background an element's text is painted on: the nearest opaque-enough background colour, or
  // null when an image or gradient makes it unknown.
  const bgCache = new Map();
  const background = (el) => {
    if (!el) return { r: 255, g: 255, b: 255, a: 1 };
    if (bgCache.has(el)) return bgCache.get(el);
    const s = cs(el);
    let out;
    if (s.backgroundImage && s.backgroundImage !== 'none') out = null;
    else {
      const c = parseColor(s.backgroundColor);
      out = c && c.a >= 0.5 ? c : background(flatParent(el));
    }
    bgCache.set(el, out);
    return out;
  };

  const zeroClip = (s) => {
    const cp = s.clipPath || 'none';
    if (cp !== 'none') {
      let m = /inset\(\s*([\d.]+)%/.exec(cp);
      if (m && parseFloat(m[1]) >= 50) return true;
      if (/circle\(\s*0(px|%)?[\s)]/.test(cp) || /ellipse\(\s*0(px|%)?\s+0(px|%)?/.test(cp)) return true;
    }
    if (s.clip && s.clip !== 'auto' && (s.position === 'absolute' || s.position === 'fixed')) {
      const n = (s.clip.match(/-?[\d.]+/g) || []).map(parseFloat);
      if (n.length === 4 && (n[1] - n[3] <= 1 || n[2] - n[0] <= 1)) return true;
    }
    if (/opacity\(\s*0*(\.0*)?(%|\s*\))/.test(s.filter || '')) return true;
    if (/^matrix\(\s*0,\s*0,\s*0,\s*0,/.test(s.transform || '')) return true;
    return false;
  };

  // hiddenChain: the element or an ancestor hides its content (display, opacity, clip-path, clip,
  // filter, scale(0)).
  const chainCache = new Map();
  const hiddenChain = (el) => {
    if (!el) return false;
    if (chainCache.has(el)) return chainCache.get(el);
    const s = cs(el);
    let h = s.display === 'none' || s.contentVisibility === 'hidden' || parseFloat(s.opacity) < 0.1 || zeroClip(s);
    if (!h) h = hiddenChain(flatParent(el));
    chainCache.set(el, h);
    return h;
  };

  // Clipping ancestors: rectangles a descendant's box must overlap to be seen.
  const clipCache = new Map();
  const clipRect = (el) => {
    if (clipCache.has(el)) return clipCache.get(el);
    let r = null;
    if (el !== root && el !== doc.body) {
      const s = cs(el);
      const ox = s.overflowX, oy = s.overflowY;
      if ((ox !== 'visible' || oy !== 'visible') && s.display !== 'contents') {
        const b = el.getBoundingClientRect();
        if (ox === 'auto' || ox === 'scroll' || oy === 'auto' || oy === 'scroll') {
          // Scrollable: everything inside its scroll area can be scrolled into view.
          r = { left: b.left - el.scrollLeft, top: b.top - el.scrollTop,
            right: b.left - el.scrollLeft + Math.max(el.scrollWidth, b.width),
            bottom: b.top - el.scrollTop + Math.max(el.scrollHeight, b.height), scroller: true };
        } else {
          r = { left: b.left, top: b.top, right: b.right, bottom: b.bottom };
        }
      }
    }
    clipCache.set(el, r);
    return r;
  };

  // How far the scroll containers (overflow auto or scroll) above el are scrolled: added back, so
  // that which text counts as a run does not depend on scroll positions (the bridge scrolls them
  // between layouts, see reveal).
  // By element, its parent's sum and its own (the reader scrolls nothing before its last use: a
  // reveal scrolls after the walk, and returns).
  const scrolledCache = new Map();
  const NOT_SCROLLED = { x: 0, y: 0, n: 0 };
  const scrolledBy = (el) => {
    if (!el) return NOT_SCROLLED;
    let v = scrolledCache.get(el);
    if (v) return v;
    v = scrolledBy(flatParent(el));
    if (el !== root && el !== doc.body) {
      const s = cs(el);
      if (['auto', 'scroll'].includes(s.overflowX) || ['auto', 'scroll'].includes(s.overflowY)) v = { x: v.x + el.scrollLeft, y: v.y + el.scrollTop, n: v.n + 1 };
    }
    scrolledCache.set(el, v);
    return v;
  };
  const boxVisible = (rect, el) => {
    if (rect.width < 1 || rect.height < 1) return false;
    const sc = scrolledBy(el);
    const left = rect.left + sx + sc.x, top = rect.top + sy + sc.y;
    if (left + rect.width <= 0 || top + rect.height <= 0) return false; // off the page, up or left
    if (left > Math.max(4 * vw, 5000)) return false; // far off to the right
    // Past a scroll container, what must be shown is the container's box: scrolling it shows the
    // text inside, wherever its scroll area puts it.
    let r = rect;
    for (let a = el; a; a = flatParent(a)) {
      const c = clipRect(a);
      if (!c) continue;
      const w = Math.min(r.right, c.right) - Math.max(r.left, c.left);
      const h = Math.min(r.bottom, c.bottom) - Math.max(r.top, c.top);
      if (w < 2 || h < 2) return false;
      if (c.scroller) r = a.getBoundingClientRect();
    }
    return true;
  };

  // inkClip: the rectangle, in client coordinates, that el's ancestors confine its text's ink to:
  // the border box (a superset of the padding box that clips) of each ancestor with overflow
  // hidden or clip on an axis (no clip margin), that axis only, up to the first ancestor taken out
  // of flow (position absolute or fixed may escape an ancestor's clip: none above it is used).
  // Scrolling axes (auto, scroll) are not used: what they show is decided by revealing. A run's
  // box is cut to it, so that a box no glyph can draw in (a sidebar's long word its own overflow
  // hides) covers none of the text beside it.
  const inkClipCache = new Map();
  const inkClip = (el) => {
    if (inkClipCache.has(el)) return inkClipCache.get(el);
    let c = null;
    for (let a = el; a && a !== root && a !== doc.body; a = flatParent(a)) {
      const s = cs(a);
      if (s.display !== 'contents') {
        const cuts = (o) => o === 'hidden' || (o === 'clip' && !(parseFloat(s.overflowClipMargin || '0') > 0));
        const cx = cuts(s.overflowX), cy = cuts(s.overflowY);
        if (cx || cy) {
          const b = a.getBoundingClientRect();
          const r = { left: cx ? b.left : -Infinity, right: cx ? b.right : Infinity, top: cy ? b.top : -Infinity, bottom: cy ? b.bottom : Infinity };
          c = c ? { left: Math.max(c.left, r.left), right: Math.min(c.right, r.right), top: Math.max(c.top, r.top), bottom: Math.min(c.bottom, r.bottom) } : r;
        }
      }
      if (s.position === 'absolute' || s.position === 'fixed') break;
    }
    inkClipCache.set(el, c);
    return c;
  };

  const boxed = (el) => {
    while (el && cs(el).display === 'contents') el = flatParent(el);
    return el;
  };

  const elementVisible = (el) => {
    if (hiddenChain(el)) return false;
    const s = cs(el);
    if (s.visibility !== 'visible') return false;
    const b = boxed(el);
    if (!b || !b.checkVisibility({ checkOpacity: true })) return false;
    return boxVisible(b.getBoundingClientRect(), b);
  };

  const textCache = new Map();
  const range = doc.createRange();
  const textVisible = (t) => {
    if (textCache.has(t)) return textCache.get(t);
    const v = textVisibleUncached(t);
    textCache.set(t, v);
    return v;
  };
  // Runs: every text node that passes the structural checks below gets an ordinal, in walk order.
  // In "layout" mode the reader returns each run's boxes in page coordinates; the bridge shoots
  // the page with and without text paint and passes back, in "read" mode, a verdict per run
  // (opts.verdicts: 0 hidden, 1 visible, 2 withheld: not proven visible, 4 not decided yet, 5
  // visible and read by an earlier read: its text is not given again, but links, fields and the
  // heading use it). Without verdicts (pixels turned off) the paint heuristics decide (contrast
  // against the nearest background colour, alpha).
  const runs = [];
  // lens: in layout mode, each run's length in characters, white space collapsed: the bridge
  // proves a long page a chunk's worth of text at a time (visibility.go, proveChars).
  const lens = [];
  // inks: in layout mode, by run, how far its ink may reach past its boxes, [top, right, bottom,
  // left] in CSS px, where it can (0 margins left out): its text shadows (offset and blur), its
  // stroke, glyphs that draw past the font's box (stacked combining marks, swashes: measured with
  // the run's font), a blur above it, all scaled as the run is. The bridge counts a pixel for a
  // run only where no other run's ink may reach (internal/pixels): a shadow thrown onto hidden text is
  // not that text's ink.
  const inks = {};
  let inkCtx = null;
  // shadowsOf: a computed text-shadow's shadows, each [x, y, blur] in px.
  const shadowsOf = (v) => {
    const out = [];
    if (v && v !== 'none') {
      v.replace(/(?:rgba?\([^)]*\)\s*)?(-?[\d.]+)px\s+(-?[\d.]+)px(?:\s+([\d.]+)px)?/g, (all, x, y, bl) => {
        out.push([parseFloat(x), parseFloat(y), parseFloat(bl || '0')]);
        return all;
      });
    }
    return out;
  };
  const inkOf = (t, s, sb) => {
    const m = [0, 0, 0, 0];
    for (const [dx, dy, b] of shadowsOf(s.textShadow)) {
      m[0] = Math.max(m[0], b - dy); m[1] = Math.max(m[1], b + dx);
      m[2] = Math.max(m[2], b + dy); m[3] = Math.max(m[3], b - dx);
    }
    const stroke = parseFloat(s.webkitTextStrokeWidth) || 0;
    try {
      if (!inkCtx) inkCtx = new OffscreenCanvas(1, 1).getContext('2d');
      inkCtx.font = s.fontStyle + ' ' + s.fontWeight + ' ' + s.fontSize + ' ' + s.fontFamily;
      const mt = inkCtx.measureText(t.data);
      m[0] += Math.max(0, mt.actualBoundingBoxAscent - mt.fontBoundingBoxAscent);
      m[1] += Math.max(0, mt.actualBoundingBoxRight - mt.width);
      m[2] += Math.max(0, mt.actualBoundingBoxDescent - mt.fontBoundingBoxDescent);
      m[3] += Math.max(0, mt.actualBoundingBoxLeft);
    } catch (e) { /* no canvas here: the style's margins only */ }
    const k = sb.scale, blur = 3 * sb.blur;
    const out = m.map((v) => (Math.max(0, v) + stroke) * k + blur);
    return out.some((v) => v > 0.5) ? out.map((v) => Math.ceil(v)) : null;
  };
  const runOf = new Map();
  const runParents = new Set();
  let nRuns = 0, withheld = 0, revealNode = null;
  const voided = []; // runs proven visible whose text changed since (withheld: WHY_CHANGED)
  // The runs of this frame's last layout, by node (mode layout keeps them in this isolated world;
  // mode read takes each run's verdict by its node: proven).
  // A later layout of the same read replaces it only when it counts the same nodes in the same
  // order (80_layout.js); else it reports differs, and the bridge does not take its boxes.
  const LAYOUT_KEY = '__browserAgentLayout';
  const layoutNodes = new WeakMap(), layoutList = [];
  const lastLayout = globalThis[LAYOUT_KEY];
  const proven = opts.mode === MODE_READ && lastLayout && lastLayout.root === root ? lastLayout.nodes : null;
  const docW = Math.max(root.scrollWidth, vw);
  const docH = Math.max(root.scrollHeight, doc.body ? doc.body.scrollHeight : 0);
  // Can the page be scrolled sideways? Not when the root (or the body, which then gives the
  // viewport its overflow) hides its horizontal overflow.
  const xLocked = ['hidden', 'clip'].includes(getComputedStyle(root).overflowX) ||
    (doc.body && ['hidden', 'clip'].includes(getComputedStyle(doc.body).overflowX) && getComputedStyle(root).overflowX === 'visible');
  // What the shots can show: in the main frame, the page a person can scroll (captureBeyondViewport,
  // page coordinates); in a child frame, its viewport (the bridge scrolls it, see reveal).
  const child = !!opts.child;
  const vh = window.innerHeight || root.clientHeight || 0;
  const capW = child ? vw : (xLocked ? vw : docW);
  const capH = child ? vh : docH;
  const shownNow = (r, el) => {
    for (let a = el; a; a = flatParent(a)) {
      if (a === root || a === doc.body) continue;
      const s = cs(a);
      if (s.overflowX === 'visible' && s.overflowY === 'visible') continue;
      if (s.display === 'contents') continue;
      const c = a.getBoundingClientRect();
      const w = Math.min(r.right, c.right) - Math.max(r.left, c.left);
      const h = Math.min(r.bottom, c.bottom) - Math.max(r.top, c.top);
      if (w < 2 || h < 2) return false;
    }
    return true;
  };
  // Effective scale (transforms, zoom) and blur radius of an element's chain, in CSS px.
  const scaleCache = new Map();
  const scaleBlur = (el) => {
    if (!el) return { scale: 1, blur: 0 };
    if (scaleCache.has(el)) return scaleCache.get(el);
    const up = scaleBlur(flatParent(el));
    const s = cs(el);
    let k = 1;
    if (s.transform && s.transform !== 'none') {
      try {
        const m = new DOMMatrixReadOnly(s.transform);
        k = Math.sqrt(Math.abs(m.a * m.d - m.b * m.c));
      } catch (e) { k = 1; }
    }
    let blur = 0;
    const re = /blur\(\s*([\d.]+)px\s*\)/g;
    let mt;
    while ((mt = re.exec(s.filter || ''))) blur += parseFloat(mt[1]);
    const out = { scale: up.scale * k, blur: up.blur + blur * up.scale * k };
    scaleCache.set(el, out);
    return out;
  };
  // pinned: the element is in a position: fixed subtree. Such text is drawn where the viewport
  // is, whatever the scroll: scrolling never shows what lies outside the viewport, and a shot of
  // the page beyond the viewport draws it at the current scroll offset (a page that scrolls
  // itself down would show a fixed box placed above the viewport).
  const pinnedOf = new Map();
  const pinned = (el) => {
    const path = [];
    let v = false;
    for (let a = el; a; a = flatParent(a)) {
      if (pinnedOf.has(a)) { v = pinnedOf.get(a); break; }
      path.push(a);
      if (cs(a).position === 'fixed') { v = true; break; }
    }
    for (const a of path) pinnedOf.set(a, v);
    return v;
  };
  // Why a text node that is not a run, or a run not read, was not read (the account, 90_result.js):
  // [reason, detail].
  const textWhy = new Map();
  const no = (t, why, detail) => { textWhy.set(t, [why, detail]); return false; };
  // runRects: what makes a text node a run, as the layout and the read judge it: its parent (p),
  // that parent's style (s), the element its boxes are judged by (b), its scale and blur (sb)
  // and its client rects that can be seen; false, with why (no), when it is not one.
  const runRects = (t) => {
    if (!t.data.trim()) return false;
    const p = flatParent(t);
    if (!p) return no(t, WHY_NOT_RENDERED, 'no parent in the flat tree');
    if (hiddenChain(p)) return no(t, WHY_HIDDEN, 'display, opacity, clip or scale of an ancestor');
    const s = cs(p);
    if (s.visibility !== 'visible') return no(t, WHY_HIDDEN, 'visibility');
    const b = boxed(p);
    if (!b || !b.checkVisibility({ checkOpacity: true })) return no(t, WHY_HIDDEN, 'not rendered by the engine (checkVisibility)');
    // Too small or too blurred to read: the effective font size (computed size times the scale of
    // the transforms above it) under MIN_FONT, or a blur radius of a quarter of it or more.
    const sb = scaleBlur(p);
    const eff = parseFloat(s.fontSize) * sb.scale;
    if (eff < MIN_FONT || sb.blur >= eff / 4) return no(t, WHY_HIDDEN, 'too small or blurred to read');
    // Text drawn only by its shadows (no fill, no stroke): each shadow blurred by a quarter of the
    // size or more is a smudge.
    const fill = parseColor(s.webkitTextFillColor);
    if (fill && fill.a < 0.1 && !(parseFloat(s.webkitTextStrokeWidth) > 0) && s.textShadow && s.textShadow !== 'none') {
      const blurs = shadowsOf(s.textShadow).map((sh) => sh[2]);
      if (blurs.length && blurs.every((bl) => bl * sb.scale >= eff / 4)) return no(t, WHY_HIDDEN, 'drawn only by blurred shadows');
    }
    range.selectNodeContents(t);
    const rects = Array.from(range.getClientRects()).filter((r) => boxVisible(r, b));
    if (!rects.length) return no(t, WHY_HIDDEN, 'no box on the page: off it, empty or clipped');
    return { p, s, b, sb, rects };
  };
  // layoutEntry: what mode layout reports of a run (runRects'): 0 when it is beyond what scrolling
  // the page shows, null when it is not shown now (a scroll container or the frame must be
  // scrolled first, see reveal), else its boxes in the frame's page coordinates; and whether its
  // ink is measured (shown).
  const layoutEntry = (p, b, rects) => {
    // Inside a scroll container a run may lie past the page's end: scrolling shows it.
    let decidable = capH > 0, beyond = scrolledBy(b).n === 0;
    const boxes = [];
    const fixed = !child && pinned(p);
    const ink = inkClip(p);
    for (const r1 of rects) {
      let r0 = r1;
      if (ink) {
        const l = Math.max(r1.left, ink.left), tp = Math.max(r1.top, ink.top);
        const rr = Math.min(r1.right, ink.right), bb = Math.min(r1.bottom, ink.bottom);
        if (rr <= l || bb <= tp) continue; // its overflow hides it all
        r0 = { left: l, top: tp, width: rr - l, height: bb - tp, right: rr, bottom: bb };
      }
      let r = r0;
      if (fixed) {
        // Only the part inside the viewport can be seen, now or after any scroll.
        const l = Math.max(r0.left, 0), tp = Math.max(r0.top, 0);
        const rr = Math.min(r0.left + r0.width, vw), bb = Math.min(r0.top + r0.height, vh);
        if (rr <= l || bb <= tp) continue;
        r = { left: l, top: tp, width: rr - l, height: bb - tp, right: rr, bottom: bb };
      }
      const x = r.left + sx, y = r.top + sy;
      if (!(y >= docH || (xLocked && x >= vw)) || child) beyond = false;
      const cx = child ? r.left : x, cy = child ? r.top : y;
      if (cx < 0 || cy < 0 || cx + r.width > capW || cy + r.height > capH || !shownNow(r, b)) decidable = false;
      boxes.push([cx, cy, r.width, r.height]);
    }
    if (fixed && !boxes.length) beyond = true;
    return { entry: beyond ? 0 : (decidable ? boxes : null), shown: decidable && !beyond };
  };
  const textVisibleUncached = (t) => {
    const rr = runRects(t);
    if (!rr) return false;
    const { p, s, b, sb, rects } = rr;
    let i = nRuns++;
    if (opts.mode === MODE_LAYOUT) { layoutNodes.set(t, i); layoutList.push(t); }
    if (opts.verdicts && proven) {
      // The verdicts are the last layout's, run by run: this node's, by identity. A node that
      // layout did not count was put in after the shots.
      i = proven.get(t);
      if (i === undefined) return no(t, WHY_CHANGED, 'put in after the shots');
    }
    runOf.set(t, i);
    runParents.add(p);
    if (opts.mode === MODE_LAYOUT) {
      const le = layoutEntry(p, b, rects);
      if (i === opts.reveal) revealNode = t;
      runs.push(le.entry);
      if (le.shown) { const k = inkOf(t, s, sb); if (k) inks[i] = k; }
      lens.push(t.data.replace(/\s+/g, ' ').length);
    }
    if (!opts.verdicts) return (paintVisible(s, p) || no(t, WHY_HIDDEN, 'paint: no contrast (pixels off)')) && fontDraws(t, p, s);
    // With verdicts, a run the pixels did not prove visible is not read; withheld ones (and any
    // run of a frame the pixels did not lay out) are counted, with the bridge's reason.
    const vd = opts.verdicts[i];
    if (vd === RUN_VISIBLE && changedText(t)) {
      // Proven visible, but its text is not the text the shots proved: withheld (25_changes.js).
      voided.push(i);
      return no(t, WHY_CHANGED, 'its text changed after its proof');
    }
    if (vd === RUN_VISIBLE || vd === RUN_SERVED) return fontDraws(t, p, s);
    if (vd === RUN_LATER) return no(t, WHY_LATER, 'left for the next read');
    if (vd === RUN_HIDDEN) return no(t, WHY_HIDDEN, 'pixels: drawing it changes nothing a person sees');
    withheld++;
    return no(t, (opts.why && opts.why[i]) || WHY_UNPROVEN, 'pixels: not decided');
  };
  // fontDraws: a run proven drawn is read only when its font draws its characters (45_fonts.js).
  const fontDraws = (t, p, s) => { const w = fontWhy(t, p, s); return !w || no(t, WHY_FONT, w); };
  // paintVisible is the fallback for runs the pixels did not decide. It errs towards hidden: text
  // on a background it cannot know (an image or a gradient) is not read.
  const paintVisible = (s, p) => {
    let color = parseColor(s.webkitTextFillColor) || parseColor(s.color);
    if (color && color.a < 0.1) return false;
    const bg = background(p);
    if (!bg) return false;
    if (color && bg && contrast(color, bg) < 1.25) {
      const stroke = parseFloat(s.webkitTextStrokeWidth) || 0;
      if (stroke <= 0 && (!s.textShadow || s.textShadow === 'none')) return false;
    }
    return true;
  };

