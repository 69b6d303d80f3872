// Module walk: the frame's visible text in the flat tree, with its links, child frames' places
// and heading; a field's value is never read.
  // The reader's marks in a frame's text (01_consts.js), as patterns: any of them, a child frame's
  // place, the marks of a run an earlier read gave, and such a run whole.
  const ALL_MARKS = new RegExp('[' + FRAME_OPEN + FRAME_CLOSE + SERVED_OPEN + SERVED_CLOSE + ']', 'g');
  const FRAME_MARK = new RegExp(FRAME_OPEN + '[^' + FRAME_CLOSE + ']*' + FRAME_CLOSE, 'g');
  const SERVED_MARKS = new RegExp('[' + SERVED_OPEN + SERVED_CLOSE + ']', 'g');
  const SERVED_RUN = new RegExp(SERVED_OPEN + '[^' + SERVED_CLOSE + ']*' + SERVED_CLOSE, 'g');
  const FIELD_ROLES = new Set(['textbox', 'searchbox']);
  // The elements whose text is a form field's value or its choices.
  const FIELD_TAGS = new Set(['input', 'textarea', 'select', 'option', 'optgroup', 'datalist']);
  const ACCT_HANDED = 1, ACCT_SERVED = 2;
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
      if (st.acct) st.acct.set(node, opts.verdicts && opts.verdicts[runOf.get(node)] === RUN_SERVED ? ACCT_SERVED : ACCT_HANDED);
      const ws = p ? cs(p).whiteSpace : 'normal';
      // The private-use marks below are the reader's own: page text cannot carry them.
      let t = node.data.replace(ALL_MARKS, '');
      if (!ws.startsWith('pre') && ws !== 'break-spaces') t = t.replace(/\s+/g, ' ');
      // A run read by an earlier read is marked: the page's text drops it, a link's or the
      // heading's text keeps it.
      if (opts.verdicts && opts.verdicts[runOf.get(node)] === RUN_SERVED) t = SERVED_OPEN + t + SERVED_CLOSE;
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
      // A child frame's own text is read, and counted, in its frame; the owner's children are
      // never drawn.
      if (st.acct) st.stops.set(el, WHY_NOT_RENDERED);
      if (st.frames && elementVisible(el)) {
        const id = frameOwners.get(el);
        st.frames.push(id);
        st.emit(out, '\n' + FRAME_OPEN + id + FRAME_CLOSE + '\n');
      }
      return;
    }
    if (SKIP.has(tag)) {
      if (st.acct) st.stops.set(el, FIELD_TAGS.has(tag) ? WHY_FIELD : WHY_NOT_RENDERED);
      return;
    }
    // A field's value is never read: the text of an editable element (contenteditable, a
    // document in design mode, role textbox or searchbox) is what a person typed or a page put
    // in the field, whatever the field is named now or later.
    if (editableField(el)) {
      if (st.acct) st.stops.set(el, WHY_FIELD);
      return;
    }
    if (tag === 'dialog' && !el.open) {
      if (st.acct) st.stops.set(el, WHY_NOT_RENDERED);
      return;
    }
    if (tag === 'br') { st.emit(out, '\n'); return; }
    const s = cs(el);
    if (s.display === 'none') {
      if (st.acct) st.stops.set(el, WHY_NOT_RENDERED);
      return;
    }
    const block = isBlock(s);
    const brk = block ? (PARA.has(tag) ? '\u2029' : '\n') : '';
    // An element the caller asked about (opts.nodeCount): where its text starts and ends in out.
    const span = st.spans && st.spans.get(el);
    if (span) span[0] = out.length;
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
      const text = norm(out.slice(h1).join('').replace(FRAME_MARK, ' ').replace(SERVED_MARKS, ''));
      if (text) st.heading = text.slice(0, 300);
    }
    if (link && st.links.length < opts.linkCap) {
      const text = norm(out.slice(link.start).join('').replace(FRAME_MARK, ' ').replace(SERVED_MARKS, ''));
      if (text) {
        let href = '';
        try { href = new URL(el.getAttribute('href'), el.baseURI).href; } catch (e) { href = ''; }
        st.links.push({ text: text.slice(0, 300), href });
      }
    }
    if (s.display === 'table-cell') st.emit(out, ' ');
    st.emit(out, brk);
    if (span) span[1] = out.length;
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
    return norm(out.join('').replace(SERVED_MARKS, ''));
  };

  const main = newState(opts.textCap);
  // The account (90_result.js): what became of each text node the walk reached (acct), and the
  // elements below which it read nothing, with why (stops).
  main.acct = new Map();
  main.stops = new Map();
  main.links = [];
  main.frames = [];
  main.structures = [];
  // The elements the caller asked about, after the frame owners: the walk notes each one's span.
  main.spans = new Map();
  const askedNodes = [];
  for (let i = 0; i < (opts.nodeCount | 0); i++) {
    const el = handles[(opts.closedCount | 0) + (opts.frameIds || []).length + i];
    askedNodes.push(el);
    if (el && el.nodeType === 1) main.spans.set(el, [-1, -1]);
  }
  const out = [];
  walk(doc.body || root, out, main);
  const mainOut = out;
  const raw = out.join('');
  // join: what goes between the text earlier reads gave and this read's, when this read's first
  // new text follows an earlier read's last run in the same block (a paragraph whose runs two
  // reads decided): nothing inside a word, a space or a line break inside a paragraph, a blank
  // line between paragraphs, as the page has it. null (the caller's blank line) when no earlier
  // run comes first, new text comes before one, or a child frame's text comes next.
  let join = null;
  const lastServed = raw.lastIndexOf(SERVED_CLOSE);
  if (lastServed >= 0) {
    const before = raw.slice(0, lastServed + 1).replace(SERVED_RUN, '').replace(FRAME_MARK, '');
    // The white space that ends the run (its text node's own) and what follows it.
    const lead = /^[\s\u2029]*/.exec(raw.slice(lastServed + 1))[0];
    const gap = /[\s\u2029]*$/.exec(raw.slice(0, lastServed))[0] + lead;
    const next = raw.charAt(lastServed + 1 + lead.length);
    if (!/[^\s\u2029]/.test(before) && next && next !== FRAME_OPEN) {
      join = gap.includes('\u2029') ? '\n\n' : gap.includes('\n') ? '\n' : gap ? ' ' : '';
    }
  }
  const text = raw
    .replace(SERVED_RUN, '')
    .replace(/[ \t\f\v\u00a0]+/g, ' ')
    .replace(/ *([\n\u2029]) */g, '$1')
    .replace(/[\n\u2029]+/g, (m) => (m.includes('\u2029') ? '\n\n' : '\n'))
    .trim();

