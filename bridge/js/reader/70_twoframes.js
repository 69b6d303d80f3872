// Module twoframes: the two-frame proof's preparation: the marks that turn off exactly the runs'
// paint, and what draws by itself (movers) or forces the four-frame proof.
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
    // parents: each run's parent in the flat tree, by index; owner: the run parent each marked
    // element is marked for (PAINT_SOME turns off some parents' paint only); kidKeeps: [child, token,
    // parent] for the run parents among a run parent's children (PAINT_SOME keeps their paint);
    // someMarks: the marks PAINT_SOME set.
    const st = { attr, root, marks: [], css: [], sheets: [], scrollers: [], checks: [], movers: [], parents: layoutList.map(flatParent), owner: new Map(), kidKeeps: [], someMarks: [] };
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
    st.paintOf = paintOf;
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
    let markFor = null; // the run parent whose marks are being made
    const mark = (el, tok) => {
      if (!marks.has(el)) marks.set(el, []);
      marks.get(el).push(tok);
      st.owner.set(el, markFor);
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
    // A marker draws when its list item has a list style or the marker content of its own; a
    // marker that draws nothing is not kept (its text paint cannot be given back to it: ::marker
    // takes no -webkit-text-fill-color, so a kept one would force the four-frame proof on every
    // "list-style: none" item with text of its own, as Sphinx's navigation bars).
    const draws = (q, ps, s) => ps === '::marker'
      ? s.listStyleType !== 'none' || s.listStyleImage !== 'none' || (q.content !== 'none' && q.content !== 'normal')
      : q.content !== 'none' && q.content !== 'normal';
    for (const p of runParents) {
      if (drawnByBackground(p)) { why = why || 'text drawn by a background (background-clip: text)'; continue; }
      const svg = p instanceof SVGElement;
      const tok = svg ? 's' : 'o';
      markFor = p;
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
        if (!draws(q, ps, s)) continue;
        keep(p, ps);
        const t = ps[2] + classOf(decl(q, props));
        mark(p, t);
        addRule(p, '[' + attr + '~="' + t + '"]' + ps + '{' + decl(q, props) + '}');
        inherits = true;
      }
      for (const k of kidsOf(p)) {
        const d = decl(cs(k), props);
        const t = 'r' + classOf(d);
        addRule(k, '[' + attr + '~="' + t + '"]{' + d + '}');
        if (runParents.has(k)) {
          // A child holding runs of its own inherits p's paint: off with p in "runs", where it
          // goes off too; kept as it is when only some runs' paint goes off (PAINT_SOME) and it
          // is not one of them, so that an italic word's overhang does not go off with the
          // period after it and leave that period's ink no pixel of its own.
          st.kidKeeps.push([k, t, p]);
          continue;
        }
        keepTree(k);
        mark(k, t);
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

