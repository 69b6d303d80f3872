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
    // A layout that counts as many runs, some of them other nodes (a clock's text replaced at
    // each tick), keeps the kept one: replaced lists those runs, which the bridge no longer
    // proves, and the read withholds their new nodes (put in after the shots).
    let differs = false;
    const replaced = [];
    if (opts.watch || !lastLayout || lastLayout.root !== root) {
      globalThis[LAYOUT_KEY] = { root, nodes: layoutNodes, list: layoutList };
    } else if (layoutList.length !== lastLayout.list.length) {
      differs = true;
    } else {
      // Only a node in the place of one that is gone: a node that moved to another place
      // (one put in above it, one taken out) differs, as before.
      const now = new Set(layoutList);
      layoutList.forEach((t, k) => {
        const was = lastLayout.list[k];
        if (was === t) return;
        if (lastLayout.nodes.has(t) || now.has(was)) differs = true;
        else replaced.push(k);
      });
      if (differs) replaced.length = 0;
    }
    const slow = twoFrames(owners);
    return { url: String(location.href), title: '', text: '', links: [], fields: [], frames: [], controls, runs, lens, inks, nRuns, capW, capH, owners,
      view: [sx, sy, vw, vh], differs, replaced, slow, still: globalThis.__browserAgentRuns.still(), movers: globalThis.__browserAgentRuns.movers };
  }
