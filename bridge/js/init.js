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

  // Short timers. The bridge waits, before it reads a page, for the timeouts of at most 1 s the
  // page has pending (a form a script adds 200 ms after load is then on the page when it is read).
  // __BA_TIMERS__ is replaced by a per-session name; the function it names returns the ms until
  // the last pending short timeout is due. A page can find and fool it, and so only shorten the
  // wait, which a longer timeout does anyway: a field added later is caught by the check on the
  // next call.
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
  Object.defineProperty(g, '__BA_TIMERS__', {
    value: () => {
      let max = 0;
      const t = now();
      for (const [id, due] of pending) {
        if (due < t - 2000) pending.delete(id); else max = Math.max(max, due - t);
      }
      return max;
    },
    enumerable: false, configurable: false, writable: false,
  });
})();
