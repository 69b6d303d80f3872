// Module paint: the visibility proof's paint toggling (mode paint): all text paint off, only
// foreign text's, exactly the runs' (two-frame proof), and back.
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
    for (const [el, v] of ba.marks.concat(ba.someMarks || [])) { try { if (el.getAttribute(ba.attr) === v) el.removeAttribute(ba.attr); } catch (e) {} }
    ba.someMarks = [];
  };
  // The page must not change while the proof shoots it. Frozen, its timers and frames do not
  // run, but a MutationObserver of the page's is called right after an evaluation that changed
  // the DOM (the runs' marks, the four-frame proof's style elements), and could change what the
  // next shot sees (an overlay taken away while the runs' paint is off), and a page whose timers
  // still run (the headless shell's) changes too. An observer of the reader's own, in this
  // isolated world, records every change in every scope (everyScope, 25_changes.js) from the
  // first paint change of a proof to the last; a change that is not the reader's voids the proof
  // where it may have drawn (tampered, and changed: changedRects, 25_changes.js): the bridge
  // counts nothing of those shots for the runs there.
  const TAMPER = '__browserAgentTamper';
  const PAINT_TAG = 'data-browser-agent-paint', BGTEXT = 'data-browser-agent-bgtext';
  // The reader's own changes, by identity: the elements it marked and the style elements it made
  // (a page can give its own elements the same attribute names or tag).
  const MINE = '__browserAgentMine';
  const mine = globalThis[MINE] || (globalThis[MINE] = new WeakSet());
  const marked = new WeakSet(ba ? ba.marks.map(([el]) => el).concat((ba.kidKeeps || []).map(([el]) => el)) : []);
  const ours = (r) => (r.type === 'attributes' && ((r.attributeName === BGTEXT && mine.has(r.target)) || (ba && r.attributeName === ba.attr && marked.has(r.target)))) ||
    (r.type === 'childList' && Array.from(r.addedNodes).every((n) => mine.has(n)) && Array.from(r.removedNodes).every((n) => mine.has(n)));
  // The group's watch takes the places a change may have drawn as the page makes it (its
  // observer is called after the task that changed the DOM, before the page draws again): an
  // element shown and hidden again within one group (a carousel turning faster than a group is
  // shot) drew where its box was while it was shown, and only there. Before, such an element
  // had no box at either end of the group and voided the whole group, every group of a busy
  // machine, and the page was withheld. Each change also takes again the box of everything an
  // earlier change touched: an element put in view may be moved by a later change before it
  // goes.
  const MAX_TOUCHED = 400;
  const watchPage = () => {
    if (globalThis[TAMPER]) return;
    const w = { seen: false, all: false, rects: [], boxes: boxesNow(), touched: new Set() };
    const child = !!opts.child;
    const note = (rs) => {
      const recs = rs.filter((r) => !ours(r));
      if (!recs.length) return;
      w.seen = true;
      if (w.all) return;
      try {
        const c = changedRects(recs, w.boxes, w.touched);
        w.all = c.all || w.touched.size > MAX_TOUCHED;
        w.rects.push(...c.rects);
        w.retake();
      } catch (e) {
        w.all = true;
      }
    };
    // retake takes again the box of everything a change touched, where it moved since.
    w.retake = () => {
      const ox = child ? 0 : window.scrollX, oy = child ? 0 : window.scrollY;
      for (const el of w.touched) {
        const r = el.getBoundingClientRect();
        if (r.width <= 0 || r.height <= 0) continue;
        const b = [r.left + ox, r.top + oy, r.width, r.height], o = w.boxes.get(el);
        if (o && o.every((x, i) => x === b[i])) continue;
        w.boxes.set(el, b);
        w.rects.push([b[0] - 4, b[1] - 4, b[2] + 8, b[3] + 8]);
      }
    };
    w.mo = new MutationObserver(note);
    w.take = () => note(w.mo.takeRecords());
    for (const sc of everyScope()) w.mo.observe(sc, { subtree: true, attributes: true, childList: true, characterData: true });
    globalThis[TAMPER] = w;
  };
  // tampered takes the group's watch: the places its changes may have drawn ({all, rects}), or
  // null when the page changed nothing.
  const tampered = () => {
    const w = globalThis[TAMPER];
    if (!w) return null;
    w.take();
    w.mo.disconnect();
    globalThis[TAMPER] = null;
    if (!w.seen) return null;
    // And at the end: what a change touched may have moved since with no change of its own (an
    // image or a font that loaded and reflowed the page), and drawn there.
    if (!w.all) {
      try { w.retake(); } catch (e) { w.all = true; }
    }
    return { all: w.all, rects: w.rects };
  };
  if (opts.mode === MODE_PAINT && opts.paint === PAINT_RUNS) {
    if (!ba || ba.root !== root) throw new Error('runs paint: no layout of this document');
    watchPage();
    unpaintRuns();
    for (const [el, v] of ba.marks) el.setAttribute(ba.attr, v);
    scopeSheets(ba.css);
    void root.offsetHeight;
    return { url: String(location.href), title: '', text: '', links: [], fields: [], frames: [], controls: [], still: ba.still(), exact: ba.exact() };
  }
  if (opts.mode === MODE_PAINT && opts.paint === PAINT_SOME) {
    // The paint of some runs only (opts.only): the marks made for their parents; a run parent
    // among their children keeps its own paint (kidKeeps). What still goes off with them (a
    // rule of the page's that ties them) is reported: off lists every run whose
    // parent's text paint changed, as the page computes it, so that the bridge counts a pixel
    // for a run only where no other run that went off has a box.
    if (!ba || ba.root !== root || !ba.parents) throw new Error('runs paint: no layout of this document');
    const parents = new Set();
    for (const i of opts.only || []) if (ba.parents[i]) parents.add(ba.parents[i]);
    const paintNow = (p) => { try { return ba.paintOf(getComputedStyle(p)); } catch (e) { return null; } };
    const before = new Map();
    for (const p of ba.parents) if (p && !before.has(p)) before.set(p, paintNow(p));
    watchPage();
    unpaintRuns();
    // A run parent inside one going off keeps its paint unless its own runs go off too.
    const vals = new Map();
    const add = (el, v) => vals.set(el, vals.has(el) ? vals.get(el) + ' ' + v : v);
    for (const [el, v] of ba.marks) if (parents.has(ba.owner.get(el))) add(el, v);
    for (const [k, t, p] of ba.kidKeeps) if (parents.has(p) && !parents.has(k)) add(k, t);
    ba.someMarks = Array.from(vals);
    for (const [el, v] of ba.someMarks) el.setAttribute(ba.attr, v);
    scopeSheets(ba.css);
    void root.offsetHeight;
    const off = [];
    ba.parents.forEach((p, i) => { if (!p || paintNow(p) !== before.get(p)) off.push(i); });
    const offSet = new Set(off);
    const exact = ba.exact() && (opts.only || []).every((i) => offSet.has(i));
    return { url: String(location.href), title: '', text: '', links: [], fields: [], frames: [], controls: [], still: ba.still(), exact, off };
  }
  if (opts.mode === MODE_PAINT && opts.paint === PAINT_RESTORE) {
    // After the two-frame proof's second shot: only what "runs" changed is undone.
    const changed = tampered();
    unpaintRuns();
    return { url: String(location.href), title: '', text: '', links: [], fields: [], frames: [], controls: [], still: ba ? ba.still() : '', tampered: !!changed, changed };
  }
  if (opts.mode === MODE_PAINT) {
    const changed = opts.paint === PAINT_ON ? tampered() : (watchPage(), null);
    if (opts.paint === PAINT_ON) unpaintRuns();
    const tag = PAINT_TAG;
    // Decorations (underlines, emphasis marks) stay: a line under transparent text is not text.
    const off = ' { -webkit-text-fill-color: transparent !important; ' +
      '-webkit-text-stroke-color: transparent !important; text-shadow: none !important; } ';
    // 'foreign': only the text that is not a run (generated content, list markers, form
    // controls, an image's alt text, object fallback): the bridge excludes the pixels it draws.
    const foreign = '*::before, *::after, *::marker, *::placeholder, *::file-selector-button, input, textarea, select, select *, img, object, object *';
    const css = opts.paint === PAINT_FOREIGN ? foreign + off
      : '*, *::first-line, *::first-letter, ' + foreign + off +
        'text, tspan, textPath { fill: transparent !important; stroke: transparent !important; } ' +
        // Text drawn by its background (background-clip: text): that background goes too.
        '[data-browser-agent-bgtext] { background: none !important; }';
    for (const sc of everyScope()) {
      for (const el of (opts.paint === PAINT_FOREIGN ? [] : sc.querySelectorAll('*'))) {
        if (opts.paint === PAINT_OFF) {
          const st = getComputedStyle(el);
          if (st.backgroundClip === 'text' || st.webkitBackgroundClip === 'text') { mine.add(el); el.setAttribute(BGTEXT, ''); }
        } else if (el.hasAttribute(BGTEXT)) {
          el.removeAttribute(BGTEXT);
        }
      }
      const host = sc === doc ? (doc.head || root) : sc;
      if (opts.paint !== PAINT_ON) {
        for (const st of Array.from(host.querySelectorAll('style[' + tag + ']'))) st.remove();
        const st = doc.createElement('style');
        mine.add(st);
        st.setAttribute(tag, '');
        st.textContent = css;
        host.appendChild(st);
      } else {
        for (const st of Array.from(host.querySelectorAll('style[' + tag + ']'))) st.remove();
      }
    }
    void root.offsetHeight;
    return { url: String(location.href), title: '', text: '', links: [], fields: [], frames: [], controls: [], still: ba ? ba.still() : '', tampered: !!changed, changed };
  }
