// Module changes: what the page changed while it was proven (the proof's own changes left out),
// so that a change voids only what it touches. Two watches, both MutationObservers of this
// isolated world on every scope (document and shadow roots, open and closed), run while the page
// is frozen and its clocks stopped:
//   - the job's (startChanges, at the first layout of a read; changedText, in the read): a text
//     node whose text changed after the layout that began its proof, or that was put in since,
//     is not handed out (the text handed out is the text the shots proved);
//   - a group's (30_paint.js: from the first paint change of a group of shots to the last): the
//     places a change could have drawn over (changedRects) void only the runs whose boxes meet
//     them, and the rest of the group counts.
  const PAINT_ATTR = 'data-browser-agent-paint', BGTEXT_ATTR = 'data-browser-agent-bgtext';
  const MINE_KEY = '__browserAgentMine';
  const mineNodes = globalThis[MINE_KEY] || (globalThis[MINE_KEY] = new WeakSet());
  const runAttr = 'data-' + (opts.world || 'browser-agent-reader');
  // ownChange: a record of the reader's own making (the runs' marks, the four-frame proof's style
  // elements, background-clip marks).
  const ownChange = (r) => (r.type === 'attributes' && (r.attributeName === runAttr || (r.attributeName === BGTEXT_ATTR && mineNodes.has(r.target)))) ||
    (r.type === 'childList' && Array.from(r.addedNodes).every((n) => mineNodes.has(n)) && Array.from(r.removedNodes).every((n) => mineNodes.has(n)));
  const everyScope = () => {
    const out = [doc];
    const walk = (n) => {
      for (let c = n.firstElementChild; c; c = c.nextElementSibling) {
        const sr = c.shadowRoot || closedRoots.get(c);
        if (sr) { out.push(sr); walk(sr); }
        walk(c);
      }
    };
    if (root) walk(root);
    return out;
  };
  const observeAll = (onRecords) => {
    const mo = new MutationObserver(onRecords);
    for (const sc of everyScope()) mo.observe(sc, { subtree: true, attributes: true, childList: true, characterData: true });
    return mo;
  };
  const CHANGES = '__browserAgentChanges';
  // The job's watch: text nodes whose text changed, and the nodes put in (their subtrees).
  const startChanges = () => {
    if (globalThis[CHANGES] && globalThis[CHANGES].root === root) return;
    const w = { root, text: new WeakSet(), added: new WeakSet(), n: 0, any: 0 };
    const note = (rs) => {
      for (const r of rs) {
        if (ownChange(r)) continue;
        w.any++;
        if (r.type === 'characterData') { w.text.add(r.target); w.n++; }
        if (r.type === 'childList') for (const a of r.addedNodes) { w.added.add(a); w.n++; }
      }
    };
    w.mo = observeAll(note);
    w.take = () => note(w.mo.takeRecords());
    globalThis[CHANGES] = w;
  };
  // changedText says whether text node t (a run) is not the text the shots proved: its text
  // changed, or it or an ancestor (in the flat tree) was put in, since the job's watch began.
  const changedText = (t) => {
    const w = globalThis[CHANGES];
    if (!w || w.root !== root) return false;
    w.take();
    if (!w.n) return false;
    if (w.text.has(t)) return true;
    for (let n = t; n; n = n.parentNode || (n.nodeType === 11 ? n.host : null)) if (w.added.has(n)) return true;
    return false;
  };
  // boxesNow: every element's box, in the coordinates changedRects gives, taken when a group's
  // watch begins: an element that has no box after a change (a carousel's slide set to display:
  // none) may have drawn where it was then, and only there.
  const boxesNow = () => {
    const child = !!opts.child;
    const ox = child ? 0 : window.scrollX, oy = child ? 0 : window.scrollY;
    const m = new WeakMap();
    for (const sc of everyScope()) {
      for (const el of sc.querySelectorAll('*')) {
        const r = el.getBoundingClientRect();
        m.set(el, [r.left + ox, r.top + oy, r.width, r.height]);
      }
    }
    return m;
  };
  // changedRects: where the changes of records may have drawn, in the frame's page coordinates
  // (client coordinates in a child frame), the boxes of what changed now, padded by a few px, and
  // for what has no box now its last box known (before: boxesNow's when the group's watch began,
  // updated here with each box taken); all: anywhere (a removed element, a style sheet, the root,
  // the head or the body changed, something that draws outside its box, something with no box
  // now and none known before, or too many nodes). touched, when given, gets every element whose
  // box was taken (the group's watch takes their boxes again at each change: a later change may
  // move them).
  const changedRects = (records, before, touched) => {
    const child = !!opts.child;
    const ox = child ? 0 : window.scrollX, oy = child ? 0 : window.scrollY;
    const PAD = 4, MAX = 400;
    const rects = [];
    let all = false, n = 0;
    const put = (r) => {
      if (!r || (r.width <= 0 && r.height <= 0)) return;
      rects.push([r.left + ox - PAD, r.top + oy - PAD, r.width + 2 * PAD, r.height + 2 * PAD]);
    };
    const whole = (el) => el === root || el === doc.body || el === doc.head || (el.closest && el.closest('head')) ||
      ['style', 'link', 'svg'].includes(el.localName) || el.nodeType === 9 || el.nodeType === 11;
    // What draws outside its box (shadows, outlines, filters) may have drawn anywhere.
    const spills = (el) => {
      const st = getComputedStyle(el);
      return st.boxShadow !== 'none' || st.textShadow !== 'none' || st.filter !== 'none' || st.backdropFilter !== 'none' ||
        (st.outlineStyle !== 'none' && parseFloat(st.outlineWidth) > 0);
    };
    // An element with no box now (display: none, say) drew, before, where its box was when the
    // watch began; one put in since, or with no box then either, may have drawn anywhere.
    const put1 = (el) => {
      const r = el.getBoundingClientRect();
      if (spills(el)) { all = true; return; }
      if (touched) touched.add(el);
      if (r.width <= 0 || r.height <= 0) {
        const b = before && before.get(el);
        if (!b || b[2] <= 0 || b[3] <= 0) { all = true; return; }
        rects.push([b[0] - PAD, b[1] - PAD, b[2] + 2 * PAD, b[3] + 2 * PAD]);
        return;
      }
      if (before) before.set(el, [r.left + ox, r.top + oy, r.width, r.height]);
      put(r);
    };
    const subtree = (el) => {
      if (whole(el)) { all = true; return; }
      put1(el);
      for (const d of el.querySelectorAll('*')) {
        if (++n > MAX) { all = true; return; }
        put1(d);
      }
    };
    const textRect = (t) => {
      const p = t.parentNode;
      if (!p || p.nodeType !== 1 || whole(p)) { all = true; return; }
      put1(p);
      const rg = doc.createRange();
      rg.selectNodeContents(t);
      put(rg.getBoundingClientRect());
    };
    for (const r of records) {
      if (all) break;
      if (r.type === 'characterData') { textRect(r.target); continue; }
      if (r.type === 'attributes') { if (r.target.nodeType === 1) subtree(r.target); else all = true; continue; }
      for (const x of r.removedNodes) if (x.nodeType === 1) all = true;
      for (const x of r.addedNodes) {
        if (x.nodeType === 1) subtree(x);
        else if (x.nodeType === 3 && x.isConnected) textRect(x);
      }
      if (r.removedNodes.length && r.target.nodeType === 1) subtree(r.target);
      else if (r.removedNodes.length) all = true;
    }
    return { all, rects };
  };
  // The job's watch begins (again) at the first layout of a frame in a read (opts.watch).
  if (opts.mode === MODE_LAYOUT && opts.watch) {
    const old = globalThis[CHANGES];
    if (old) old.mo.disconnect();
    globalThis[CHANGES] = null;
    startChanges();
  }
  // The changes since the job's watch began, every kind (a text, an attribute, a node put in or
  // taken out): a proof kept past its read (a read ahead while the model thinks) is served only
  // when its page made none since.
  // changesSoFar is that count, -1 with no watch on this document (the read mode returns it too).
  const changesSoFar = () => {
    const w = globalThis[CHANGES];
    if (!w || w.root !== root) return -1;
    w.take();
    return w.any;
  };
  if (opts.mode === MODE_CHANGES) {
    return { url: String(location.href), title: '', text: '', links: [], fields: [], frames: [], controls: [], changes: changesSoFar() };
  }
