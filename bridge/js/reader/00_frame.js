// browser-agent reader. The bridge calls this function with Runtime.callFunctionOn in an isolated
// world it created for one frame, so the page's scripts can neither see nor patch it (they share
// the DOM, not the JavaScript globals). It never reads a form field's value: not an input's, and
// not the text of an editable element (see editableField).
//
// opts: {closedCount, frameIds, textCap, linkCap, fieldCap, minFontPx}
// handles: closedCount closed shadow roots (resolved by the bridge over CDP, since page script
//          cannot reach them either), then one frame owner element per frameIds entry, then
//          (mode read) opts.nodeCount elements whose own visible text is asked for (nodeTexts).
// Returns {title, heading (the first visible h1), text, links: [{text, href}], fields: [{label, value}], frames: [frameId]}; text
// holds "\uE000<frameId>\uE001" where a visible child frame sits.
//
// The reader is one function; the files of bridge/js/reader are its body, joined in name order by
// the bridge (reader.go): this one opens it, 01_consts.js (generated from bridge/internal/readerjs)
// declares the constants it shares with Go, and each later file is one job, ending with
// 90_result.js, which closes it. A file may use what an earlier one declared.
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

