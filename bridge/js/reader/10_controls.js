// Module controls: the credential field detection's half in the page: every editable element
// and the names a person sees (the bridge decides on them, credential.go).
  // --- Credential check. Every editable element of the frame (open and closed shadow roots
  // included; child frames are checked in their own evaluation) with the names a person sees. The
  // bridge decides on them (credential.go); this runs in the same synchronous evaluation as the
  // read below, so the page cannot add a field between the two.
  const genContent = (el, pseudo) => {
    let c;
    try { c = getComputedStyle(el, pseudo).content; } catch (e) { return ''; }
    if (!c || c === 'none' || c === 'normal') return '';
    let out = '';
    c.replace(/"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|attr\(\s*([\w-]+)\s*\)/g, (m, a, b, at) => {
      if (at) { out += el.getAttribute(at) || ''; return m; }
      out += (a !== undefined ? a : b)
        .replace(/\\([0-9a-fA-F]{1,6}) ?/g, (x, h) => { try { return String.fromCodePoint(parseInt(h, 16)); } catch (e) { return ''; } })
        .replace(/\\(.)/g, '$1');
      return m;
    });
    return out;
  };
  const NOTEXT = new Set(['script', 'style', 'template', 'noscript']);
  // Text of a subtree as rendered text would give it: text nodes, ::before/::after content,
  // shadow roots; at most budget characters.
  const nameText = (n, budget) => {
    const out = [];
    let len = 0;
    const push = (t) => { if (t && len < budget) { out.push(t); len += t.length; } };
    const rec = (n) => {
      if (len >= budget) return;
      if (n.nodeType === 3) { push(n.data); return; }
      if (n.nodeType === 11) { for (let c = n.firstChild; c; c = c.nextSibling) rec(c); return; }
      if (n.nodeType !== 1 || NOTEXT.has(n.localName)) return;
      push(genContent(n, '::before'));
      const sr = n.shadowRoot || closedRoots.get(n);
      for (let c = (sr || n).firstChild; c; c = c.nextSibling) rec(c);
      push(genContent(n, '::after'));
    };
    rec(n);
    return out.join(' ').slice(0, budget);
  };
  const scopeOf = (el) => { const r = el.getRootNode(); return r && r.getElementById ? r : doc; };
  // The rendered text just before el: the closest non-empty piece of text found walking back
  // through its preceding siblings, then its ancestors' (up to three levels, crossing shadow
  // boundaries, an ancestor's ::before included); its last 120 characters.
  const nearText = (el) => {
    let n = el;
    for (let level = 0; level < 4 && n; level++) {
      for (let p = n.previousSibling; p; p = p.previousSibling) {
        const t = nameText(p, 4000).trim();
        if (t) return t.slice(-120);
      }
      let up = n.parentNode;
      if (up && up.nodeType === 11) up = up.host || null;
      if (!up || up.nodeType !== 1) break;
      const b = genContent(up, '::before').trim();
      if (b) return b.slice(-120);
      n = up;
    }
    return '';
  };
  const TEXTLESS = new Set(['hidden', 'submit', 'button', 'reset', 'image', 'checkbox', 'radio', 'file', 'range', 'color']);
  const controlOf = (el) => {
    const tag = el.localName;
    let typ = '', readonly = false;
    if (tag === 'input') {
      typ = String(el.type || '').toLowerCase();
      if (TEXTLESS.has(typ)) return null;
    } else if (tag !== 'textarea' && tag !== 'select') {
      const role = (el.getAttribute('role') || '').toLowerCase();
      const editableHost = el.isContentEditable && !(flatParentOf(el) && flatParentOf(el).isContentEditable);
      if (!editableHost && role !== 'textbox') return null;
      // A field only by its role, and read-only by the page's word (credential.go's ReadOnly).
      readonly = !el.isContentEditable && (el.getAttribute('aria-readonly') || '').trim().toLowerCase() === 'true';
    }
    const names = [];
    const add = (t) => { if (t) names.push(String(t).slice(0, 500)); };
    add(el.getAttribute('aria-label'));
    for (const attr of ['aria-labelledby', 'aria-describedby']) {
      for (const id of (el.getAttribute(attr) || '').split(/\s+/)) {
        if (!id) continue;
        const ref = scopeOf(el).getElementById(id) || doc.getElementById(id);
        if (ref) add(nameText(ref, 500));
      }
    }
    if (el.labels) for (const l of el.labels) add(nameText(l, 500));
    for (let a = el.parentElement; a; a = a.parentElement) if (a.localName === 'label') add(nameText(a, 500));
    for (const attr of ['placeholder', 'aria-placeholder', 'title', 'name', 'id']) add(el.getAttribute(attr));
    let masked = false;
    try { const s = getComputedStyle(el); masked = (s.webkitTextSecurity || 'none') !== 'none'; } catch (e) {}
    return {
      tag, type: typ, role: el.getAttribute('role') || '', autocomplete: el.getAttribute('autocomplete') || '',
      inputmode: el.getAttribute('inputmode') || '', pattern: el.getAttribute('pattern') || '',
      maxlength: tag === 'input' || tag === 'textarea' ? Math.max(0, el.maxLength | 0) : 0,
      masked, readonly, names, near: [nearText(el)],
    };
  };
  const flatParentOf = (n) => {
    const p = n.parentNode;
    if (!p) return null;
    if (p.nodeType === 11) return p.host || null;
    return p.nodeType === 1 ? p : null;
  };
  const collectControls = () => {
    const out = [];
    const rec = (n) => {
      if (out.length >= 500) return;
      if (n.nodeType === 1) {
        const c = controlOf(n);
        if (c) out.push(c);
        const sr = n.shadowRoot || closedRoots.get(n);
        if (sr) rec(sr);
      }
      for (let c = n.firstElementChild; c; c = c.nextElementSibling) rec(c);
    };
    rec(root);
    return out;
  };
