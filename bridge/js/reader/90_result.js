// Module result: the answer of mode read, with its account; the end of the reader's function.
  // The account: every text node of the frame (its document and every shadow root, open or
  // closed), each counted once by its characters other than white space: handed out by this
  // read, served by an earlier one, left for a later one, or withheld with why. Nothing else: a
  // node the walk never reached is withheld by the element that stopped it (a script, a field, a
  // subtree not rendered), past the text cap, or as not rendered (outside the body, or light DOM
  // a shadow root does not show). opts.forceWhy withholds the whole frame for that reason (a
  // frame the page does not show). opts.debug lists each withheld node: why, the reader's
  // detail, its characters, its parent's tag and its box in the frame's page coordinates.
  const account = { handed: 0, served: 0, later: 0, withheld: {}, list: [], listed: 0 };
  {
    const WS = /\s+/g, PAIRS = /[\uD800-\uDBFF][\uDC00-\uDFFF]/g;
    const charsOf = (d) => { const x = d.replace(WS, ''); return x.length - (x.match(PAIRS) || []).length; };
    const note = (t, n, why, detail) => {
      account.withheld[why] = (account.withheld[why] || 0) + n;
      if (!opts.debug) return;
      account.listed++;
      if (account.list.length >= DEBUG_LIST_CAP) return;
      let box = [0, 0, 0, 0];
      try {
        range.selectNodeContents(t);
        const r = range.getBoundingClientRect();
        box = [r.left + sx, r.top + sy, r.width, r.height].map((v) => Math.round(v * 10) / 10);
      } catch (e) {}
      const p = t.parentNode;
      account.list.push({ reason: why, detail: detail || '', chars: n, tag: p && p.nodeType === 1 ? p.localName : (p && p.nodeType === 11 ? '#shadow-root' : ''), box });
    };
    const visit = (n, stop) => {
      if (n.nodeType === 3) {
        const k = charsOf(n.data);
        if (!k) return;
        if (opts.forceWhy) { note(n, k, opts.forceWhy, ''); return; }
        const a = main.acct.get(n);
        if (a === ACCT_HANDED) { account.handed += k; return; }
        if (a === ACCT_SERVED) { account.served += k; return; }
        if (stop) { note(n, k, stop.why, 'inside <' + stop.tag + '>'); return; }
        const w = textWhy.get(n);
        if (w && w[0] === WHY_LATER) { account.later += k; return; }
        if (w) { note(n, k, w[0], w[1]); return; }
        if (main.full) { note(n, k, WHY_CAP, ''); return; }
        note(n, k, WHY_NOT_RENDERED, 'not in the rendered tree');
        return;
      }
      if (n.nodeType === 1 && !stop && main.stops.has(n)) stop = { why: main.stops.get(n), tag: n.localName };
      if (n.nodeType === 1) {
        const sr = n.shadowRoot || closedRoots.get(n);
        if (sr) visit(sr, stop);
      }
      for (let c = n.firstChild; c; c = c.nextSibling) visit(c, stop);
    };
    visit(doc, null);
  }
  // The elements the caller asked about (askedNodes, 50_walk.js): each one's own visible text,
  // from its span in the walk's text (else walked alone: one the walk did not reach, or a walk
  // cut at its cap), then, for a field, its labels' (its label elements, the elements its
  // aria-labelledby names), by this read's verdicts; null for one not found in this document.
  const nodeTexts = [];
  {
    const LABELLED = new Set(['input', 'textarea', 'select']);
    const own = (el) => {
      const span = main.spans.get(el);
      if (!main.full && span && span[0] >= 0 && span[1] >= span[0]) {
        return norm(mainOut.slice(span[0], span[1]).join('').replace(SERVED_MARKS, ''));
      }
      return visibleText(el, opts.textCap);
    };
    for (const el of askedNodes) {
      if (!el || el.nodeType !== 1 || !el.isConnected || el.ownerDocument !== doc) { nodeTexts.push(null); continue; }
      const texts = [own(el)];
      if (LABELLED.has(el.localName)) {
        for (const l of el.labels || []) texts.push(own(l));
        for (const id of (el.getAttribute('aria-labelledby') || '').split(/\s+/)) {
          const r = id && doc.getElementById(id);
          if (r) texts.push(own(r));
        }
      }
      nodeTexts.push(texts);
    }
  }
  return {
    url: String(location.href),
    title: (doc.title || '').replace(/\s+/g, ' ').trim().slice(0, 300),
    heading: main.heading || '',
    text,
    join,
    links: main.links,
    fields,
    frames: main.frames,
    controls,
    nRuns,
    withheld,
    voided,
    byNode: !!proven,
    account,
    nodeTexts: opts.nodeCount ? nodeTexts : undefined,
    // The page's changes since the job's watch began, as this read saw the page (ModeChanges).
    changes: changesSoFar(),
  };
}
