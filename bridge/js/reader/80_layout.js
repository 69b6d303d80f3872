// Module layout: the answer of mode layout (a run scrolled into view, or every run's boxes,
// the child frames' owners and the two-frame proof's state).
  if (opts.mode === MODE_LAYOUT) {
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
    // The runs by node, for the read (40_runs.js): this layout's, when it is the read's first of
    // the frame or counts the nodes the kept one counts, in its order.
    let differs = false;
    if (opts.watch || !lastLayout || lastLayout.root !== root) {
      globalThis[LAYOUT_KEY] = { root, nodes: layoutNodes, list: layoutList };
    } else {
      differs = layoutList.length !== lastLayout.list.length || layoutList.some((t, k) => lastLayout.list[k] !== t);
    }
    const slow = twoFrames(owners);
    return { url: String(location.href), title: '', text: '', links: [], fields: [], frames: [], controls, runs, lens, inks, nRuns, capW, capH, owners,
      view: [sx, sy, vw, vh], differs, slow, still: globalThis.__browserAgentRuns.still(), movers: globalThis.__browserAgentRuns.movers };
  }
