// browser-agent reader. The bridge calls this function with Runtime.callFunctionOn in an isolated
// world it created for one frame, so the page's scripts can neither see nor patch it (they share
// the DOM, not the JavaScript globals). It never reads a form field's value: not an input's, and
// not the text of an editable element (see editableField).
//
// opts: {closedCount, frameIds, textCap, linkCap, fieldCap, minFontPx}
// handles: closedCount closed shadow roots (resolved by the bridge over CDP, since page script
//          cannot reach them either), then one frame owner element per frameIds entry.
// Returns {title, heading (the first visible h1), text, links: [{text, href}], fields: [{label, value}], frames: [frameId]}; text
// holds "\uE000<frameId>\uE001" where a visible child frame sits.
function (opts, ...handles) {
  const closedRoots = new Map();
  for (let i = 0; i < (opts.closedCount | 0); i++) {
    const r = handles[i];
    try { if (r && r.host) closedRoots.set(r.host, r); } catch (e) {}
  }
  const frameOwners = new Map();
  (opts.frameIds || []).forEach((id, i) => {
    const el = handles[(opts.closedCount | 0) + i];
    if (el) frameOwners.set(el, id);
  });
  const doc = document;
  const root = doc.documentElement;
  if (!root) return { url: String(location.href), title: '', text: '', links: [], fields: [], frames: [], controls: [] };

  // --- Credential check. Every editable element of the frame (open and closed shadow roots
  // included; child frames are checked in their own evaluation) with the names a person sees. The
  // bridge decides on them (credential.go); this runs in the same synchronous evaluation as the
  // read below, so the page cannot add a field between the two.
  const genContent = (el, pseudo) => {
    let c;
    try { c = getComputedStyle(el, pseudo).content; } catch (e) { return ''; }
    if (!c || c === 'none' || c === 'normal') return '';
    let out = '';
    c.replace(/"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|attr\(\s*([\w-]+)\s*\)/g, (m, a, b, at) => {
      if (at) { out += el.getAttribute(at) || ''; return m; }
      out += (a !== undefined ? a : b)
        .replace(/\\([0-9a-fA-F]{1,6}) ?/g, (x, h) => { try { return String.fromCodePoint(parseInt(h, 16)); } catch (e) { return ''; } })
        .replace(/\\(.)/g, '$1');
      return m;
    });
    return out;
  };
  const NOTEXT = new Set(['script', 'style', 'template', 'noscript']);
  // Text of a subtree as rendered text would give it: text nodes, ::before/::after content,
  // shadow roots; at most budget characters.
  const nameText = (n, budget) => {
    const out = [];
    let len = 0;
    const push = (t) => { if (t && len < budget) { out.push(t); len += t.length; } };
    const rec = (n) => {
      if (len >= budget) return;
      if (n.nodeType === 3) { push(n.data); return; }
      if (n.nodeType === 11) { for (let c = n.firstChild; c; c = c.nextSibling) rec(c); return; }
      if (n.nodeType !== 1 || NOTEXT.has(n.localName)) return;
      push(genContent(n, '::before'));
      const sr = n.shadowRoot || closedRoots.get(n);
      for (let c = (sr || n).firstChild; c; c = c.nextSibling) rec(c);
      push(genContent(n, '::after'));
    };
    rec(n);
    return out.join(' ').slice(0, budget);
  };
  const scopeOf = (el) => { const r = el.getRootNode(); return r && r.getElementById ? r : doc; };
  // The rendered text just before el: the closest non-empty piece of text found walking back
  // through its preceding siblings, then its ancestors' (up to three levels, crossing shadow
  // boundaries, an ancestor's ::before included); its last 120 characters.
  const nearText = (el) => {
    let n = el;
    for (let level = 0; level < 4 && n; level++) {
      for (let p = n.previousSibling; p; p = p.previousSibling) {
        const t = nameText(p, 4000).trim();
        if (t) return t.slice(-120);
      }
      let up = n.parentNode;
      if (up && up.nodeType === 11) up = up.host || null;
      if (!up || up.nodeType !== 1) break;
      const b = genContent(up, '::before').trim();
      if (b) return b.slice(-120);
      n = up;
    }
    return '';
  };
  const TEXTLESS = new Set(['hidden', 'submit', 'button', 'reset', 'image', 'checkbox', 'radio', 'file', 'range', 'color']);
  const controlOf = (el) => {
    const tag = el.localName;
    let typ = '';
    if (tag === 'input') {
      typ = String(el.type || '').toLowerCase();
      if (TEXTLESS.has(typ)) return null;
    } else if (tag !== 'textarea' && tag !== 'select') {
      const role = (el.getAttribute('role') || '').toLowerCase();
      const editableHost = el.isContentEditable && !(flatParentOf(el) && flatParentOf(el).isContentEditable);
      if (!editableHost && role !== 'textbox') return null;
    }
    const names = [];
    const add = (t) => { if (t) names.push(String(t).slice(0, 500)); };
    add(el.getAttribute('aria-label'));
    for (const attr of ['aria-labelledby', 'aria-describedby']) {
      for (const id of (el.getAttribute(attr) || '').split(/\s+/)) {
        if (!id) continue;
        const ref = scopeOf(el).getElementById(id) || doc.getElementById(id);
        if (ref) add(nameText(ref, 500));
      }
    }
    if (el.labels) for (const l of el.labels) add(nameText(l, 500));
    for (let a = el.parentElement; a; a = a.parentElement) if (a.localName === 'label') add(nameText(a, 500));
    for (const attr of ['placeholder', 'aria-placeholder', 'title', 'name', 'id']) add(el.getAttribute(attr));
    let masked = false;
    try { const s = getComputedStyle(el); masked = (s.webkitTextSecurity || 'none') !== 'none'; } catch (e) {}
    return {
      tag, type: typ, role: el.getAttribute('role') || '', autocomplete: el.getAttribute('autocomplete') || '',
      inputmode: el.getAttribute('inputmode') || '', pattern: el.getAttribute('pattern') || '',
      maxlength: tag === 'input' || tag === 'textarea' ? Math.max(0, el.maxLength | 0) : 0,
      masked, names, near: [nearText(el)],
    };
  };
  const flatParentOf = (n) => {
    const p = n.parentNode;
    if (!p) return null;
    if (p.nodeType === 11) return p.host || null;
    return p.nodeType === 1 ? p : null;
  };
  const collectControls = () => {
    const out = [];
    const rec = (n) => {
      if (out.length >= 500) return;
      if (n.nodeType === 1) {
        const c = controlOf(n);
        if (c) out.push(c);
        const sr = n.shadowRoot || closedRoots.get(n);
        if (sr) rec(sr);
      }
      for (let c = n.firstElementChild; c; c = c.nextElementSibling) rec(c);
    };
    rec(root);
    return out;
  };
  // The paint and scroll modes answer no credential check (their controls are never looked at).
  const controls = opts.mode === 'paint' || opts.mode === 'scroll' ? [] : collectControls();
  if (opts.mode === 'scroll') {
    // The main frame scrolled to show an out-of-process frame: Chromium does not draw one that
    // is out of the viewport.
    window.scrollTo({ left: window.scrollX, top: opts.y, behavior: 'instant' });
    const runsNow = globalThis.__browserAgentRuns;
    return { url: String(location.href), title: '', text: '', links: [], fields: [], frames: [], controls: [],
      view: [window.scrollX, window.scrollY, window.innerWidth || root.clientWidth || 1280, window.innerHeight || root.clientHeight || 0],
      still: runsNow && runsNow.root === root ? runsNow.still() : '' };
  }
  if (opts.mode === 'check') {
    return { url: String(location.href), title: '', text: '', links: [], fields: [], frames: [], controls };
  }
  // "paint" mode: opts.paint 'off' makes the paint of all text transparent, in the document and in
  // every shadow root; 'on' removes that style again. Nothing else in the page changes: colour
  // (and so currentColor borders and icons) and layout stay as they are.
  // The two-frame proof (visibility.go): "runs" turns off the paint of exactly the text runs the
  // last layout of this frame counted, from what that layout kept in this isolated world (ba);
  // "on" (below) puts it back. Both report the frame's scroll positions (still).
  const ba = globalThis.__browserAgentRuns;
  const scopeSheets = (css) => {
    // Constructed sheets, adopted by each scope: no element is added to the page.
    for (const [sc, text] of css) {
      const sh = new CSSStyleSheet();
      sh.replaceSync(text);
      sc.adoptedStyleSheets = [...sc.adoptedStyleSheets, sh];
      ba.sheets.push([sc, sh]);
    }
  };
  const unpaintRuns = () => {
    if (!ba) return;
    for (const [sc, sh] of ba.sheets) { try { sc.adoptedStyleSheets = sc.adoptedStyleSheets.filter((x) => x !== sh); } catch (e) {} }
    ba.sheets = [];
    for (const [el, v] of ba.marks) { try { if (el.getAttribute(ba.attr) === v) el.removeAttribute(ba.attr); } catch (e) {} }
  };
  if (opts.mode === 'paint' && opts.paint === 'runs') {
    if (!ba || ba.root !== root) throw new Error('runs paint: no layout of this document');
    unpaintRuns();
    for (const [el, v] of ba.marks) el.setAttribute(ba.attr, v);
    scopeSheets(ba.css);
    void root.offsetHeight;
    return { url: String(location.href), title: '', text: '', links: [], fields: [], frames: [], controls: [], still: ba.still(), exact: ba.exact() };
  }
  if (opts.mode === 'paint' && opts.paint === 'restore') {
    // After the two-frame proof's second shot: only what "runs" changed is undone.
    unpaintRuns();
    return { url: String(location.href), title: '', text: '', links: [], fields: [], frames: [], controls: [], still: ba ? ba.still() : '' };
  }
  if (opts.mode === 'paint') {
    if (opts.paint === 'on') unpaintRuns();
    const tag = 'data-browser-agent-paint';
    // Decorations (underlines, emphasis marks) stay: a line under transparent text is not text.
    const off = ' { -webkit-text-fill-color: transparent !important; ' +
      '-webkit-text-stroke-color: transparent !important; text-shadow: none !important; } ';
    // 'foreign': only the text that is not a run (generated content, list markers, form
    // controls, an image's alt text, object fallback): the bridge excludes the pixels it draws.
    const foreign = '*::before, *::after, *::marker, *::placeholder, *::file-selector-button, input, textarea, select, select *, img, object, object *';
    const css = opts.paint === 'foreign' ? foreign + off
      : '*, *::first-line, *::first-letter, ' + foreign + off +
        'text, tspan, textPath { fill: transparent !important; stroke: transparent !important; } ' +
        // Text drawn by its background (background-clip: text): that background goes too.
        '[data-browser-agent-bgtext] { background: none !important; }';
    const scopes = [doc];
    const find = (n) => {
      for (let c = n.firstElementChild; c; c = c.nextElementSibling) {
        const sr = c.shadowRoot || closedRoots.get(c);
        if (sr) { scopes.push(sr); find(sr); }
        find(c);
      }
    };
    find(root);
    for (const sc of scopes) {
      for (const el of (opts.paint === 'foreign' ? [] : sc.querySelectorAll('*'))) {
        if (opts.paint === 'off') {
          const st = getComputedStyle(el);
          if (st.backgroundClip === 'text' || st.webkitBackgroundClip === 'text') el.setAttribute('data-browser-agent-bgtext', '');
        } else if (el.hasAttribute('data-browser-agent-bgtext')) {
          el.removeAttribute('data-browser-agent-bgtext');
        }
      }
      const host = sc === doc ? (doc.head || root) : sc;
      if (opts.paint !== 'on') {
        for (const st of Array.from(host.querySelectorAll('style[' + tag + ']'))) st.remove();
        const st = doc.createElement('style');
        st.setAttribute(tag, '');
        st.textContent = css;
        host.appendChild(st);
      } else {
        for (const st of Array.from(host.querySelectorAll('style[' + tag + ']'))) st.remove();
      }
    }
    void root.offsetHeight;
    return { url: String(location.href), title: '', text: '', links: [], fields: [], frames: [], controls: [], still: ba ? ba.still() : '' };
  }
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
  const scrolledBy = (el) => {
    let x = 0, y = 0, n = 0;
    for (let a = el; a; a = flatParent(a)) {
      if (a === root || a === doc.body) continue;
      const s = cs(a);
      if (['auto', 'scroll'].includes(s.overflowX) || ['auto', 'scroll'].includes(s.overflowY)) { x += a.scrollLeft; y += a.scrollTop; n++; }
    }
    return { x, y, n };
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
  const runOf = new Map();
  const runParents = new Set();
  let nRuns = 0, withheld = 0, revealNode = null;
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
  const textVisibleUncached = (t) => {
    if (!t.data.trim()) return false;
    const p = flatParent(t);
    if (!p) return false;
    if (hiddenChain(p)) return false;
    const s = cs(p);
    if (s.visibility !== 'visible') return false;
    const b = boxed(p);
    if (!b || !b.checkVisibility({ checkOpacity: true })) return false;
    // Too small or too blurred to read: the effective font size (computed size times the scale of
    // the transforms above it) under MIN_FONT, or a blur radius of a quarter of it or more.
    const sb = scaleBlur(p);
    const eff = parseFloat(s.fontSize) * sb.scale;
    if (eff < MIN_FONT || sb.blur >= eff / 4) return false;
    // Text drawn only by its shadows (no fill, no stroke): each shadow blurred by a quarter of the
    // size or more is a smudge.
    const fill = parseColor(s.webkitTextFillColor);
    if (fill && fill.a < 0.1 && !(parseFloat(s.webkitTextStrokeWidth) > 0) && s.textShadow && s.textShadow !== 'none') {
      const blurs = [];
      s.textShadow.replace(/(?:rgba?\([^)]*\)\s*)?(-?[\d.]+)px\s+(-?[\d.]+)px(?:\s+([\d.]+)px)?/g, (m, x, y, bl) => { blurs.push(parseFloat(bl || '0')); return m; });
      if (blurs.length && blurs.every((bl) => bl * sb.scale >= eff / 4)) return false;
    }
    range.selectNodeContents(t);
    const rects = Array.from(range.getClientRects()).filter((r) => boxVisible(r, b));
    if (!rects.length) return false;
    const i = nRuns++;
    runOf.set(t, i);
    runParents.add(p);
    if (opts.mode === 'layout') {
      // null: not shown now (a scroll container or the frame must be scrolled first, see
      // reveal); 0: beyond what scrolling the page shows; else its boxes, in the frame's page
      // coordinates, to compare.
      // Inside a scroll container a run may lie past the page's end: scrolling shows it.
      let decidable = capH > 0, beyond = scrolledBy(b).n === 0;
      const boxes = [];
      const fixed = !child && pinned(p);
      for (const r0 of rects) {
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
      if (i === opts.reveal) revealNode = t;
      if (fixed && !boxes.length) beyond = true;
      runs.push(beyond ? 0 : (decidable ? boxes : null));
    }
    if (!opts.verdicts) return paintVisible(s, p);
    // With verdicts, a run the pixels did not prove visible is not read; withheld ones (and any
    // run of a frame the pixels did not lay out) are counted.
    const vd = opts.verdicts[i];
    if (vd === 1 || vd === 5) return true;
    if (vd !== 0 && vd !== 4) withheld++;
    return false;
  };
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

  const FIELD_ROLES = new Set(['textbox', 'searchbox']);
  const editableField = (el) => {
    if (el.isContentEditable) return true;
    const role = el.getAttribute('role');
    return !!role && role.toLowerCase().split(/\s+/).some((r) => FIELD_ROLES.has(r));
  };

  const isBlock = (s) => {
    const d = s.display;
    return !(d.startsWith('inline') || d === 'contents' || d.startsWith('ruby') || d === 'table-cell');
  };

  // walk appends the visible text of node's flat tree to out.
  const walk = (node, out, st) => {
    if (st.full) return;
    if (node.nodeType === 3) {
      const p = flatParent(node);
      if (!node.data.trim()) {
        // White space between inline boxes separates words; it has no box of its own to check.
        if (p && !hiddenChain(p)) st.emit(out, ' ');
        return;
      }
      if (!textVisible(node)) return;
      const ws = p ? cs(p).whiteSpace : 'normal';
      // The private-use marks below are the reader's own: page text cannot carry them.
      let t = node.data.replace(/[\uE000-\uE003]/g, '');
      if (!ws.startsWith('pre') && ws !== 'break-spaces') t = t.replace(/\s+/g, ' ');
      // A run read by an earlier read is marked: the page's text drops it, a link's or the
      // heading's text keeps it.
      if (opts.verdicts && opts.verdicts[runOf.get(node)] === 5) t = '\uE002' + t + '\uE003';
      st.emit(out, t);
      return;
    }
    if (node.nodeType === 11 || node.nodeType === 9) {
      for (let c = node.firstChild; c; c = c.nextSibling) walk(c, out, st);
      return;
    }
    if (node.nodeType !== 1) return;
    const el = node;
    const tag = el.localName;
    if (frameOwners.has(el)) {
      if (st.frames && elementVisible(el)) {
        const id = frameOwners.get(el);
        st.frames.push(id);
        st.emit(out, '\n\uE000' + id + '\uE001\n');
      }
      return;
    }
    if (SKIP.has(tag)) return;
    // A field's value is never read: the text of an editable element (contenteditable, a
    // document in design mode, role textbox or searchbox) is what a person typed or a page put
    // in the field, whatever the field is named now or later.
    if (editableField(el)) return;
    if (tag === 'dialog' && !el.open) return;
    if (tag === 'br') { st.emit(out, '\n'); return; }
    const s = cs(el);
    if (s.display === 'none') return;
    const block = isBlock(s);
    const brk = block ? (PARA.has(tag) ? '\u2029' : '\n') : '';
    st.emit(out, brk);
    if (s.display === 'table-cell') st.emit(out, ' ');
    let link = null;
    if (st.links && (tag === 'a') && el.hasAttribute('href')) {
      link = { start: out.length, el };
    }
    if (st.structures) {
      if (tag === 'dl' || tag === 'table' || tag === 'label') st.structures.push(el);
    }
    const h1 = st.structures && tag === 'h1' && !st.heading ? out.length : -1;
    const sr = el.shadowRoot || closedRoots.get(el);
    if (sr) {
      walk(sr, out, st);
    } else if (tag === 'slot') {
      const assigned = el.assignedNodes({ flatten: true });
      if (assigned.length) for (const n of assigned) walk(n, out, st);
      else for (let c = el.firstChild; c; c = c.nextSibling) walk(c, out, st);
    } else {
      for (let c = el.firstChild; c; c = c.nextSibling) walk(c, out, st);
    }
    if (h1 >= 0) {
      // The main heading: the first h1 with visible text, read as the text around it is.
      const text = norm(out.slice(h1).join('').replace(/\uE000[^\uE001]*\uE001/g, ' ').replace(/[\uE002\uE003]/g, ''));
      if (text) st.heading = text.slice(0, 300);
    }
    if (link && st.links.length < opts.linkCap) {
      const text = norm(out.slice(link.start).join('').replace(/\uE000[^\uE001]*\uE001/g, ' ').replace(/[\uE002\uE003]/g, ''));
      if (text) {
        let href = '';
        try { href = new URL(el.getAttribute('href'), el.baseURI).href; } catch (e) { href = ''; }
        st.links.push({ text: text.slice(0, 300), href });
      }
    }
    if (s.display === 'table-cell') st.emit(out, ' ');
    st.emit(out, brk);
  };

  const norm = (t) => t.replace(/[\s\u2029]+/g, ' ').trim();

  const newState = (cap) => {
    const st = { full: false, len: 0 };
    st.emit = (out, t) => {
      if (st.full || !t) return;
      out.push(t);
      st.len += t.length;
      if (st.len > cap) st.full = true;
    };
    return st;
  };

  const visibleText = (el, cap) => {
    const out = [];
    walk(el, out, newState(cap || 2000));
    return norm(out.join('').replace(/[\uE002\uE003]/g, ''));
  };

  const main = newState(opts.textCap);
  main.links = [];
  main.frames = [];
  main.structures = [];
  const out = [];
  walk(doc.body || root, out, main);
  const text = out.join('')
    .replace(/\uE002[^\uE003]*\uE003/g, '')
    .replace(/[ \t\f\v\u00a0]+/g, ' ')
    .replace(/ *([\n\u2029]) */g, '$1')
    .replace(/[\n\u2029]+/g, (m) => (m.includes('\u2029') ? '\n\n' : '\n'))
    .trim();

  const fields = [];
  const add = (label, value) => {
    if (fields.length >= opts.fieldCap) return;
    label = (label || '').replace(/:\s*$/, '').slice(0, 200);
    value = (value || '').slice(0, 2000);
    if (label && value) fields.push({ label, value });
  };
  for (const el of main.structures) {
    if (fields.length >= opts.fieldCap) break;
    const tag = el.localName;
    if (tag === 'dl') {
      let labels = [];
      let lastWasDt = false;
      const items = [];
      for (const c of el.children) {
        if (c.localName === 'div') items.push(...c.children); else items.push(c);
      }
      for (const c of items) {
        if (c.localName === 'dt') {
          if (!lastWasDt) labels = [];
          labels.push(visibleText(c, 300));
          lastWasDt = true;
        } else if (c.localName === 'dd') {
          add(labels.filter(Boolean).join(' / '), visibleText(c));
          lastWasDt = false;
        }
      }
    } else if (tag === 'table') {
      const rows = Array.from(el.rows || []);
      let headers = null;
      const cellsOf = (row) => Array.from(row.cells || []);
      if (rows.length > 1 && cellsOf(rows[0]).length > 0 && cellsOf(rows[0]).every((c) => c.localName === 'th')) {
        headers = [];
        for (const c of cellsOf(rows[0])) for (let i = 0; i < (c.colSpan || 1); i++) headers.push(visibleText(c, 300));
      }
      for (const row of headers ? rows.slice(1) : rows) {
        const cells = cellsOf(row);
        let rowLabel = '';
        let col = 0;
        for (const c of cells) {
          const span = c.colSpan || 1;
          if (c.localName === 'th') {
            rowLabel = visibleText(c, 300);
          } else {
            const colLabel = headers ? (headers[col] || '') : '';
            let label = colLabel;
            if (rowLabel && colLabel && colLabel !== rowLabel && col > 0) label = rowLabel + ' / ' + colLabel;
            else if (!label) label = rowLabel;
            add(label, visibleText(c));
          }
          col += span;
        }
      }
    } else if (tag === 'label') {
      // A label not tied to a form control, followed by its value.
      if (el.control || el.querySelector('input,select,textarea,button')) continue;
      const next = el.nextElementSibling;
      if (next && !/^(input|select|textarea|button|label)$/.test(next.localName)) {
        add(visibleText(el, 300), visibleText(next));
      }
    }
  }

  // twoFrames prepares the two-frame proof of this frame (visibility.go) and says why it cannot
  // be used here, or ''. It keeps, in this isolated world, the marks that turn off exactly the
  // paint of the runs counted above: their parent elements' text paint (fill, stroke, shadows;
  // SVG fill and stroke) off, and for what inherits from those parents without being a run (their
  // child elements that are not run parents, their generated content and markers) the values it
  // has now, so that it is drawn as it is. And it looks for what can change the frame's pixels
  // while the proof runs with the page frozen and its clocks stopped (Animation.setPlaybackRate
  // 0): what draws by itself (images, media, canvases, plugins, SMIL, a frame not laid out, a
  // caret, fonts still loading), or text drawn by an ancestor's background
  // (background-clip: text) or restyled by ::first-line. Then the four-frame proof is used.
  const twoFrames = (owners) => {
    const prev = globalThis.__browserAgentRuns;
    if (prev && prev.root === root) unpaintRuns();
    const attr = 'data-' + (opts.world || 'browser-agent-reader');
    const st = { attr, root, marks: [], css: [], sheets: [], scrollers: [], checks: [], movers: [] };
    st.exact = () => st.checks.every(([el, ps, v]) => {
      try { return paintOf(ps ? getComputedStyle(el, ps) : getComputedStyle(el)) === v; } catch (e) { return false; }
    });
    st.still = () => [window.scrollX, window.scrollY].concat(st.scrollers.map((e) => e.scrollLeft + ',' + e.scrollTop)).join(';');
    globalThis.__browserAgentRuns = st;
    const INH = ['-webkit-text-fill-color', '-webkit-text-stroke-color', 'text-shadow'];
    const SVGP = ['fill', 'stroke'];
    // A declaration giving what s shows: a colour equal to the element's colour is given as
    // currentcolor, which is what it inherits as when not specified (a literal colour would be
    // inherited as such by its generated content and descendants of another colour).
    const decl = (s, props) => props.map((k) => {
      let v = s.getPropertyValue(k);
      if (k !== 'text-shadow' && v === s.color) v = 'currentcolor';
      return k + ':' + v + ' !important;';
    }).join('');
    // What the runs' paint must leave as it is: the text paint of every element and generated
    // content that inherits from a run's parent without being a run's parent, checked after the
    // "runs" paint (exact): any difference and the frame takes the four-frame proof.
    const ALL = INH.concat(SVGP);
    const paintOf = (s) => ALL.map((k) => s.getPropertyValue(k)).join('|');
    const keep = (el, ps) => {
      let q;
      try { q = ps ? getComputedStyle(el, ps) : cs(el); } catch (e) { return; }
      st.checks.push([el, ps, paintOf(q)]);
    };
    const keepTree = (el) => {
      if (runParents.has(el)) return;
      keep(el, null);
      keep(el, '::before');
      keep(el, '::after');
      if (cs(el).display.includes('list-item')) keep(el, '::marker');
      for (const k of kidsOf(el)) keepTree(k);
    };
    // Marks are classes of one attribute: 'o' (or 's' for SVG text) turns an element's text
    // paint off; 'b<k>', 'a<k>', 'm<k>' give its ::before, ::after or ::marker declaration k;
    // 'r<k>' gives an element declaration k. Few rules, however many runs.
    const rules = new Map(); // scope -> Map(rule text -> true)
    const classes = new Map(); // declaration text -> k
    const marks = new Map(); // element -> [tokens]
    const addRule = (el, rule) => {
      const sc = el.getRootNode();
      if (!rules.has(sc)) rules.set(sc, new Map());
      rules.get(sc).set(rule, true);
    };
    const mark = (el, tok) => {
      if (!marks.has(el)) marks.set(el, []);
      marks.get(el).push(tok);
    };
    const classOf = (d) => {
      if (!classes.has(d)) classes.set(d, classes.size);
      return classes.get(d);
    };
    const OFF = '-webkit-text-fill-color:transparent !important;-webkit-text-stroke-color:transparent !important;text-shadow:none !important;';
    const SVGOFF = 'fill:transparent !important;stroke:transparent !important;';
    let why = '';
    const bgText = new Map();
    const drawnByBackground = (el) => {
      if (!el || el === root) return false;
      if (bgText.has(el)) return bgText.get(el);
      const s = cs(el);
      const v = s.backgroundClip === 'text' || s.webkitBackgroundClip === 'text' || drawnByBackground(flatParent(el));
      bgText.set(el, v);
      return v;
    };
    const kidsOf = (el) => {
      const sr = el.shadowRoot || closedRoots.get(el);
      if (sr) return Array.from(sr.children);
      if (el.localName === 'slot') { const a = el.assignedElements(); if (a.length) return a; }
      return Array.from(el.children);
    };
    const draws = (q, ps) => ps === '::marker' || (q.content !== 'none' && q.content !== 'normal');
    for (const p of runParents) {
      if (drawnByBackground(p)) { why = why || 'text drawn by a background (background-clip: text)'; continue; }
      const svg = p instanceof SVGElement;
      const tok = svg ? 's' : 'o';
      mark(p, tok);
      const sel = '[' + attr + '~="' + tok + '"]';
      addRule(p, sel + ',' + sel + '::first-line,' + sel + '::first-letter{' + OFF + (svg ? SVGOFF : '') + '}');
      const props = svg ? INH.concat(SVGP) : INH;
      let inherits = false;
      const s = cs(p);
      for (const ps of ['::before', '::after', '::marker']) {
        if (ps === '::marker' && !s.display.includes('list-item')) continue;
        let q;
        try { q = getComputedStyle(p, ps); } catch (e) { continue; }
        if (!draws(q, ps)) continue;
        keep(p, ps);
        const t = ps[2] + classOf(decl(q, props));
        mark(p, t);
        addRule(p, '[' + attr + '~="' + t + '"]' + ps + '{' + decl(q, props) + '}');
        inherits = true;
      }
      for (const k of kidsOf(p)) {
        if (runParents.has(k)) continue;
        keepTree(k);
        const d = decl(cs(k), props);
        const t = 'r' + classOf(d);
        mark(k, t);
        addRule(k, '[' + attr + '~="' + t + '"]{' + d + '}');
        inherits = true;
      }
      if (inherits) {
        let fl;
        try { fl = getComputedStyle(p, '::first-line'); } catch (e) { fl = s; }
        if (['color'].concat(INH).some((k) => fl.getPropertyValue(k) !== s.getPropertyValue(k))) why = why || 'text restyled by ::first-line';
      }
    }
    for (const [el, toks] of marks) st.marks.push([el, toks.join(' ')]);
    st.css = Array.from(rules, ([sc, m]) => [sc, Array.from(m.keys()).join('\n')]);
    // What draws by itself, in every scope of the frame.
    // What draws by itself: boxed (an image, media, a canvas, a plugin, SMIL, a frame not laid
    // out, a caret) its box is left out of both proofs (st.movers: no pixel in it is evidence,
    // since no number of shots tells its change from a run's); not boxed (generated content or a
    // list marker with an image, a page background, fonts loading, or a filter or reflection that
    // spreads a boxed one) the frame takes the four-frame proof. An image is still only when it is
    // a data: URL whose bytes cannot move (JPEG, BMP, SVG without animation, script or reference).
    const MOVERS = new Set(['img', 'video', 'audio', 'canvas', 'embed', 'object', 'marquee', 'image', 'feimage']);
    const SMIL = new Set(['animate', 'set', 'animatemotion', 'animatetransform', 'animatecolor', 'discard']);
    const stillData = (u) => {
      const m = /^data:image\/(svg\+xml|jpeg|jpg|bmp)(;[^,]*)?,([\s\S]*)$/i.exec(u || '');
      if (!m) return false;
      if (m[1].toLowerCase() !== 'svg+xml') return true;
      let t = m[3];
      try { t = /;base64/i.test(m[2] || '') ? atob(t) : decodeURIComponent(t); } catch (e) { return false; }
      return !/<animate|<set|<discard|<script|<image|<use|<foreignobject|<iframe|@keyframes|animation|transition|href|url\(|@import/i.test(t);
    };
    const URLS = /url\(\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([^)]*))\s*\)/gi;
    const moves = (v) => {
      if (!v || v === 'none' || v === 'normal') return false;
      if (/image\(|image-set\(|paint\(|element\(|cross-fade\(/i.test(v)) return true;
      let any = false;
      v.replace(URLS, (m, a, b2, c) => { if (!stillData(a || b2 || (c || '').trim())) any = true; return m; });
      return any;
    };
    const boxOf = (el) => {
      const r = el.getBoundingClientRect();
      return [(child ? r.left : r.left + sx) - 2, (child ? r.top : r.top + sy) - 2, r.width + 4, r.height + 4];
    };
    const outerSVG = (el) => { let v = el.ownerSVGElement; while (v && v.ownerSVGElement) v = v.ownerSVGElement; return v; };
    const laidOut = new Set(owners.map((o) => o.id));
    let spread = false;
    const scan = (el) => {
      const tag = el.localName.toLowerCase();
      const s = cs(el);
      if (s.filter !== 'none' || (s.backdropFilter && s.backdropFilter !== 'none') || (s.webkitBoxReflect && s.webkitBoxReflect !== 'none')) spread = true;
      if (!['visible', 'clip'].includes(s.overflowX) || !['visible', 'clip'].includes(s.overflowY)) st.scrollers.push(el);
      if (tag === 'img' || (tag === 'input' && String(el.type).toLowerCase() === 'image')) {
        if (!stillData(el.currentSrc || el.src)) st.movers.push(boxOf(el));
      } else if (MOVERS.has(tag)) {
        st.movers.push(boxOf(el));
      }
      if (SMIL.has(tag) || (tag === 'use' && !(el.getAttribute('href') || el.getAttribute('xlink:href') || '#').startsWith('#'))) {
        const sv = outerSVG(el);
        if (!sv) return 'SMIL outside an svg';
        st.movers.push(boxOf(sv));
      }
      if (frameOwners.has(el) ? !laidOut.has(frameOwners.get(el)) : (tag === 'iframe' || tag === 'frame')) st.movers.push(boxOf(el));
      if (moves(s.listStyleImage) || moves(s.content) || moves(s.filter) || moves(s.clipPath)) return 'an image in the style of ' + tag;
      if (moves(s.backgroundImage) || moves(s.webkitMaskImage) || moves(s.maskImage) || moves(s.borderImageSource)) {
        // The root's and the body's background is drawn over the whole canvas.
        if (el === root || el === doc.body) return 'an image in the page background';
        st.movers.push(boxOf(el));
      }
      for (const ps of ['::before', '::after']) {
        const q = getComputedStyle(el, ps);
        if (moves(q.content) || moves(q.backgroundImage) || moves(q.webkitMaskImage) || moves(q.borderImageSource)) return 'an image in generated content';
      }
      return '';
    };
    const walkAll = (n) => {
      for (let c = n.firstElementChild; c; c = c.nextElementSibling) {
        if (!why) why = scan(c);
        const sr = c.shadowRoot || closedRoots.get(c);
        if (sr) walkAll(sr);
        walkAll(c);
      }
    };
    walkAll(doc);
    let ae = doc.activeElement;
    while (ae && (ae.shadowRoot || closedRoots.get(ae)) && (ae.shadowRoot || closedRoots.get(ae)).activeElement) ae = (ae.shadowRoot || closedRoots.get(ae)).activeElement;
    if (doc.designMode === 'on') why = why || 'a caret in an editable document';
    else if (ae && ae !== doc.body && ae !== root && (ae.isContentEditable || ['input', 'textarea', 'select'].includes(ae.localName))) st.movers.push(boxOf(ae));
    if (st.movers.length && spread) why = why || 'a filter or reflection that may spread what draws by itself';
    if (doc.fonts && doc.fonts.status !== 'loaded') why = why || 'fonts loading';
    return why;
  };

  if (opts.mode === 'layout') {
    if (revealNode) {
      // Scroll the run's scroll containers (auto or scroll: what a person can scroll; hidden and
      // clip are not) and, in a child frame, the frame, so that its first box is shown. The
      // bridge lays the frame out again after it.
      range.selectNodeContents(revealNode);
      let r = range.getBoundingClientRect();
      for (let a = flatParent(revealNode); a && a !== root && a !== doc.body; a = flatParent(a)) {
        const st = getComputedStyle(a);
        const sy = st.overflowY === 'auto' || st.overflowY === 'scroll';
        const sxx = st.overflowX === 'auto' || st.overflowX === 'scroll';
        if (!sy && !sxx) continue;
        const b = a.getBoundingClientRect();
        const top = b.top + a.clientTop, left = b.left + a.clientLeft;
        // Instant, whatever the page's scroll-behavior: the shots must find the run where the
        // next layout puts it.
        if (sy && (r.top < top || r.bottom > top + a.clientHeight)) a.scrollBy({ top: r.top - top, behavior: 'instant' });
        if (sxx && (r.left < left || r.right > left + a.clientWidth)) a.scrollBy({ left: r.left - left, behavior: 'instant' });
        r = range.getBoundingClientRect();
      }
      if (child && (r.top < 0 || r.bottom > vh || r.left < 0 || r.right > vw)) {
        window.scrollBy({ left: r.left < 0 || r.right > vw ? r.left : 0, top: r.top < 0 || r.bottom > vh ? r.top : 0, behavior: 'instant' });
      }
      return { url: String(location.href), title: '', text: '', links: [], fields: [], frames: [], controls, revealed: true };
    }
    // The content box of each visible child frame's owner, in this frame's coordinates (page
    // coordinates in the main frame, client coordinates in a child frame). An owner drawn
    // transformed (its box not its layout size) is left out: its frame's text is withheld.
    const owners = [];
    for (const id of main.frames) {
      let el = null;
      for (const [e, fid] of frameOwners) if (fid === id) el = e;
      if (!el) continue;
      const b = el.getBoundingClientRect();
      if (Math.abs(b.width - el.offsetWidth) > 0.5 || Math.abs(b.height - el.offsetHeight) > 0.5) continue;
      const st = cs(el);
      const x = b.left + parseFloat(st.borderLeftWidth) + parseFloat(st.paddingLeft) + (child ? 0 : sx);
      const y = b.top + parseFloat(st.borderTopWidth) + parseFloat(st.paddingTop) + (child ? 0 : sy);
      owners.push({ id, x, y });
    }
    const slow = twoFrames(owners);
    return { url: String(location.href), title: '', text: '', links: [], fields: [], frames: [], controls, runs, nRuns, capW, capH, owners,
      view: [sx, sy, vw, vh], slow, still: globalThis.__browserAgentRuns.still(), movers: globalThis.__browserAgentRuns.movers };
  }
  return {
    url: String(location.href),
    title: (doc.title || '').replace(/\s+/g, ' ').trim().slice(0, 300),
    heading: main.heading || '',
    text,
    links: main.links,
    fields,
    frames: main.frames,
    controls,
    nRuns,
    withheld,
  };
}
