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
})();
