// Module check: the modes that need no text: scroll (the main frame scrolled for an
// out-of-process frame) and check (the editable elements only).
  // Only the check and read modes answer the credential check: the bridge never looks at the
  // others' controls (a walk of every element).
  const controls = opts.mode === MODE_CHECK || opts.mode === MODE_READ ? collectControls() : [];
  if (opts.mode === MODE_SCROLL) {
    // The main frame scrolled to show an out-of-process frame: Chromium does not draw one that
    // is out of the viewport.
    window.scrollTo({ left: window.scrollX, top: opts.y, behavior: 'instant' });
    const runsNow = globalThis.__browserAgentRuns;
    return { url: String(location.href), title: '', text: '', links: [], fields: [], frames: [], controls: [],
      view: [window.scrollX, window.scrollY, window.innerWidth || root.clientWidth || 1280, window.innerHeight || root.clientHeight || 0],
      still: runsNow && runsNow.root === root ? runsNow.still() : '' };
  }
  if (opts.mode === MODE_CHECK) {
    return { url: String(location.href), title: '', text: '', links: [], fields: [], frames: [], controls };
  }
