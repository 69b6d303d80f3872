// browser-agent init script: runs in every frame before the page's scripts. It removes the APIs
// that reach the network outside the request route (WebRTC, WebTransport, WebSocketStream) and
// media capture, as non-configurable undefined properties the page cannot restore.
(() => {
  const g = globalThis;
  const kill = (obj, name) => {
    if (!obj) return;
    try {
      Object.defineProperty(obj, name, { value: undefined, writable: false, configurable: false, enumerable: false });
    } catch (e) {
      try { delete obj[name]; } catch (e2) {}
    }
  };
  for (const name of [
    'RTCPeerConnection', 'webkitRTCPeerConnection', 'mozRTCPeerConnection', 'RTCDataChannel',
    'RTCRtpSender', 'RTCRtpReceiver', 'RTCRtpTransceiver', 'RTCRtpScriptTransform', 'RTCIceCandidate',
    'RTCSessionDescription', 'RTCDtlsTransport', 'RTCIceTransport', 'RTCSctpTransport',
    'RTCCertificate', 'RTCDTMFSender', 'RTCDTMFToneChangeEvent', 'RTCEncodedAudioFrame',
    'RTCEncodedVideoFrame', 'RTCError', 'RTCErrorEvent', 'RTCPeerConnectionIceEvent',
    'RTCPeerConnectionIceErrorEvent', 'RTCTrackEvent', 'RTCDataChannelEvent', 'RTCStatsReport',
    'WebTransport', 'WebTransportError', 'WebSocketStream', 'MediaDevices', 'MediaStreamTrackProcessor',
  ]) kill(g, name);
  const navProto = g.Navigator && g.Navigator.prototype;
  for (const name of ['mediaDevices', 'getUserMedia', 'webkitGetUserMedia', 'mozGetUserMedia', 'getDisplayMedia']) {
    kill(navProto, name);
    kill(g.navigator, name);
  }

  // Short timers. The bridge waits, before it reads a page and before it checks it again after
  // the read, for the timeouts of at most 1 s the page has pending in any frame (a form a script
  // adds 200 ms after load, or 600 ms after a fetch answered, is then on the page when it is
  // checked). __BA_WATCH__ reports the ms until the last one is due. A page can fool the count
  // only by starting a longer timeout, which it can do anyway: a field added later is caught by
  // the check on the next call, and a read never holds a field's value.
  const pending = new Map();
  const st = g.setTimeout, ct = g.clearTimeout, now = () => g.performance.now();
  g.setTimeout = function setTimeout(fn, delay, ...rest) {
    const d = Number(delay) || 0;
    if (typeof fn !== 'function' || d > 1000) return Reflect.apply(st, this, [fn, delay, ...rest]);
    let id;
    const cb = function (...a) { pending.delete(id); return Reflect.apply(fn, this, a); };
    id = Reflect.apply(st, this, [cb, delay, ...rest]);
    pending.set(id, now() + d);
    return id;
  };
  g.clearTimeout = function clearTimeout(id) { pending.delete(id); return Reflect.apply(ct, this, [id]); };
  const pendingTimers = () => {
    let max = 0;
    const t = now();
    for (const [id, due] of pending) {
      if (due < t - 2000) pending.delete(id); else max = Math.max(max, due - t);
    }
    return max;
  };

  // Requests in flight, as the page sees them: a fetch until its promise and the reading of its
  // body settle, an XMLHttpRequest until its loadend. The bridge waits for them (and for the
  // short timers their callbacks start) before it checks a page again after reading it.
  let inflight = 0;
  const apply = Reflect.apply, then = Promise.prototype.then;
  const track = (p) => {
    inflight++;
    let done = false;
    const end = () => { if (!done) { done = true; inflight--; } };
    try { apply(then, p, [end, end]); } catch (e) { end(); }
    return p;
  };
  const origFetch = g.fetch;
  if (typeof origFetch === 'function') {
    g.fetch = function fetch(...a) { return track(apply(origFetch, this, a)); };
  }
  const R = g.Response && g.Response.prototype;
  if (R) {
    for (const m of ['text', 'json', 'arrayBuffer', 'blob', 'formData', 'bytes']) {
      const f = R[m];
      if (typeof f === 'function') R[m] = function (...a) { return track(apply(f, this, a)); };
    }
  }
  const X = g.XMLHttpRequest && g.XMLHttpRequest.prototype;
  if (X) {
    const origSend = X.send, listen = g.EventTarget.prototype.addEventListener;
    X.send = function send(...a) {
      inflight++;
      let done = false;
      apply(listen, this, ['loadend', () => { if (!done) { done = true; inflight--; } }]);
      try { return apply(origSend, this, a); } catch (e) { if (!done) { done = true; inflight--; } throw e; }
    };
  }

  // Credential watch. From before the page's first script, a MutationObserver on the document (and
  // on every shadow root the page attaches) describes each editable element that appears or
  // changes, as the reader does (js/reader.js) and never with its value; the bridge drains the
  // descriptions with __BA_WATCH__(key) after each read and withholds the page when one is a
  // credential field, even one that came and went between two checks. Only the bridge's key
  // drains them (any other caller gets the pending counts only). The recorder uses only the
  // references it took here, so a page that patches the DOM's prototypes later does not blind it.
  const key = '__BA_KEY__';
  const getter = (proto, name) => {
    const d = proto && Object.getOwnPropertyDescriptor(proto, name);
    return d && d.get;
  };
  const N = g.Node && g.Node.prototype, E = g.Element && g.Element.prototype;
  const ownDoc = g.document;
  // Whether this document is still loading (its load event not yet fired): a frame just added
  // whose load handlers have not run yet has not started the timers they may start.
  const readyState = getter(g.Document && g.Document.prototype, 'readyState');
  const loading = () => { try { return apply(readyState, ownDoc, []) !== 'complete'; } catch (e) { return false; } };
  const MO = g.MutationObserver;
  const state = { list: '', n: 0, overflow: false, seen: new Map() };
  if (N && E && MO) {
    const create = Object.create, stringify = JSON.stringify;
    const getAttribute = E.getAttribute, qsaE = E.querySelectorAll;
    const qsaD = g.Document.prototype.querySelectorAll, qsaF = g.DocumentFragment.prototype.querySelectorAll;
    const byId = g.Document.prototype.getElementById;
    const localName = getter(E, 'localName'), nodeType = getter(N, 'nodeType'), parentNode = getter(N, 'parentNode');
    const textContent = getter(N, 'textContent'), previousSibling = getter(N, 'previousSibling');
    const editable = getter(g.HTMLElement.prototype, 'isContentEditable');
    const ownerDocument = getter(N, 'ownerDocument'), isConnected = getter(N, 'isConnected');
    const labelsOf = [g.HTMLInputElement, g.HTMLTextAreaElement, g.HTMLSelectElement].map((c) => c && getter(c.prototype, 'labels'));
    const gcs = g.getComputedStyle, getProp = g.CSSStyleDeclaration.prototype.getPropertyValue;
    const lower = String.prototype.toLowerCase, slice = String.prototype.slice, trim = String.prototype.trim;
    const indexOf = String.prototype.indexOf, split = String.prototype.split;
    const mapHas = Map.prototype.has, mapSet = Map.prototype.set, mapClear = Map.prototype.clear;
    const mapSize = getter(Map.prototype, 'size');
    const recTarget = getter(g.MutationRecord.prototype, 'target');
    const listLength = getter(g.NodeList.prototype, 'length');
    const observe = MO.prototype.observe;
    const SEL = 'input,textarea,select,[contenteditable],[role]';
    const NAMED = ['aria-label', 'placeholder', 'aria-placeholder', 'title', 'name', 'id'];
    const TEXTLESS = ' hidden submit button reset image checkbox radio file range color ';
    const attr = (el, n) => { const v = apply(getAttribute, el, [n]); return v === null ? '' : '' + v; };
    const text = (n, max) => { const t = apply(textContent, n, []); return t ? apply(slice, apply(trim, t, []), [0, max]) : ''; };
    const describe = (el) => {
      // Only an element of this frame's document (its own tree or a shadow root in it) when the
      // records are delivered: a mutation's records arrive before the next frame is rendered, so
      // an element that is out of the document by then was created and removed before any frame
      // showed it (jQuery 1-3 does this at load to test the selector engine) and nobody could meet
      // it. One that was in the document when its records came is described, even if a later task
      // removes it (a field shown for one frame still withholds the page).
      if (!apply(isConnected, el, []) || apply(ownerDocument, el, []) !== ownDoc) return;
      const tag = apply(localName, el, []);
      let type = '', readonly = false;
      if (tag === 'input') {
        type = apply(lower, apply(trim, attr(el, 'type'), []), []);
        if (apply(indexOf, TEXTLESS, [' ' + type + ' ']) >= 0 && type !== '') return;
      } else if (tag !== 'textarea' && tag !== 'select') {
        const roles = ' ' + apply(lower, attr(el, 'role'), []) + ' ';
        const host = apply(editable, el, []);
        if (!host && apply(indexOf, roles, [' textbox ']) < 0 && apply(indexOf, roles, [' searchbox ']) < 0) return;
        // A field only by its role, and read-only by the page's word (credential.go's ReadOnly).
        readonly = !host && apply(lower, apply(trim, attr(el, 'aria-readonly'), []), []) === 'true';
      }
      // The description is JSON written here from strings, numbers and booleans only: the page's
      // toJSON on a prototype never runs. Its shape is the bridge's control (credential.go).
      let names = '';
      const add = (t) => { if (t) names += (names ? ',' : '') + stringify(apply(slice, t, [0, 500])); };
      for (let i = 0; i < NAMED.length; i++) add(attr(el, NAMED[i]));
      const doc = apply(ownerDocument, el, []);
      for (let j = 0; j < 2; j++) {
        const ids = apply(split, attr(el, j ? 'aria-describedby' : 'aria-labelledby'), [' ']);
        for (let i = 0; i < ids.length; i++) {
          const r = ids[i] && doc ? apply(byId, doc, [ids[i]]) : null;
          if (r) add(text(r, 500));
        }
      }
      for (let j = 0; j < labelsOf.length; j++) {
        const lg = labelsOf[j];
        let ls = null;
        try { ls = lg ? apply(lg, el, []) : null; } catch (e) {}
        if (ls) for (let i = 0; i < apply(listLength, ls, []); i++) add(text(ls[i], 500));
      }
      for (let a = apply(parentNode, el, []); a && apply(nodeType, a, []) === 1; a = apply(parentNode, a, [])) {
        if (apply(localName, a, []) === 'label') add(text(a, 500));
      }
      let near = '';
      for (let n = el, level = 0; n && !near && level < 4; n = apply(parentNode, n, []), level++) {
        for (let p = apply(previousSibling, n, []); p && !near; p = apply(previousSibling, p, [])) near = text(p, 4000);
      }
      let masked = false;
      // Masked only by a computed value that says so ('disc', 'circle', 'square'): an element
      // without computed style answers '', which is no evidence of masking.
      try { const ts = apply(getProp, apply(gcs, g, [el]), ['-webkit-text-security']); masked = ts !== 'none' && ts !== ''; } catch (e) {}
      const ml = +attr(el, 'maxlength') | 0;
      const j = '{"tag":' + stringify(tag) + ',"type":' + stringify(type) + ',"role":' + stringify(attr(el, 'role')) +
        ',"autocomplete":' + stringify(attr(el, 'autocomplete')) + ',"inputmode":' + stringify(attr(el, 'inputmode')) +
        ',"pattern":' + stringify(attr(el, 'pattern')) + ',"maxlength":' + (ml > 0 ? ml : 0) + ',"masked":' + (masked ? 'true' : 'false') + ',"readonly":' + (readonly ? 'true' : 'false') +
        ',"names":[' + names + '],"near":[' + stringify(apply(slice, near, [-120])) + ']}';
      if (apply(mapHas, state.seen, [j])) return;
      if (apply(mapSize, state.seen, []) > 5000) apply(mapClear, state.seen, []);
      apply(mapSet, state.seen, [j, true]);
      if (state.n >= 500) { state.overflow = true; return; }
      state.list += (state.n ? ',' : '') + j;
      state.n++;
    };
    const scan = (root) => {
      const t = apply(nodeType, root, []);
      if (t === 3) root = apply(parentNode, root, []);
      if (!root) return;
      const k = apply(nodeType, root, []);
      const all = k === 1 ? apply(qsaE, root, [SEL]) : k === 9 ? apply(qsaD, root, [SEL]) : k === 11 ? apply(qsaF, root, [SEL]) : null;
      // One element that cannot be described (an SVG element with a role) never hides the next.
      if (k === 1) try { describe(root); } catch (e) {}
      if (all) for (let i = 0; i < apply(listLength, all, []); i++) try { describe(all[i]); } catch (e) {}
    };
    const onMutations = (records) => {
      for (let i = 0; i < records.length; i++) {
        try { scan(apply(recTarget, records[i], [])); } catch (e) {}
      }
    };
    const opts = create(null);
    opts.childList = true; opts.subtree = true; opts.attributes = true; opts.characterData = true;
    const watch = (root) => {
      const mo = new MO(onMutations);
      apply(observe, mo, [root, opts]);
    };
    watch(ownDoc);
    const attach = E.attachShadow;
    if (typeof attach === 'function') {
      E.attachShadow = function attachShadow(...a) {
        const r = apply(attach, this, a);
        try { watch(r); } catch (e) {}
        return r;
      };
    }
  }
  Object.defineProperty(g, '__BA_WATCH__', {
    value: (k) => {
      let out = '{"timers":' + pendingTimers() + ',"inflight":' + inflight + ',"loading":' + (loading() ? 'true' : 'false');
      if (k === key) {
        out += ',"overflow":' + state.overflow + ',"controls":[' + state.list + ']';
        state.list = ''; state.n = 0; state.overflow = false;
      }
      return out + '}';
    },
    enumerable: false, configurable: false, writable: false,
  });
})();
