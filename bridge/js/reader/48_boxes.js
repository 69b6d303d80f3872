// Module boxes: mode boxes, the boxes of some runs of the frame's last layout (opts.only: their
// indices) as mode layout reports them (runRects, layoutEntry), without walking the frame: after
// a group of shots, whether the runs it decides are still where they were measured
// (visibility.go, moved). A run whose node is gone or is no longer a run is "gone": the bridge
// then lays the frame out whole, as before this mode.
  if (opts.mode === MODE_BOXES) {
    const last = globalThis[LAYOUT_KEY];
    if (!last || last.root !== root) throw new Error('boxes: no layout of this document');
    const boxes = {};
    for (const k of opts.only || []) {
      const t = last.list[k];
      const rr = t && t.isConnected ? runRects(t) : false;
      boxes[k] = rr ? layoutEntry(rr.p, rr.b, rr.rects).entry : 'gone';
    }
    return { url: String(location.href), title: '', text: '', links: [], fields: [], frames: [], controls, boxes };
  }
