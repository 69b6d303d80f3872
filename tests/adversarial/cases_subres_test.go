package adversarial

import "github.com/browser-agent/browser-agent/internal/testkit/testbrowser"

// needs marks c's positive control as needing browser feature f (tcase.Needs).
func needs(f testbrowser.Feature, c *tcase) *tcase {
	c.Needs = f
	return c
}

func subresourceCases() []*tcase {
	s := func(name, body string) *tcase { return one("subresource", name, html("<p>Record page.</p>"+body)) }
	cs := []*tcase{
		s("img", `<img src="{canary}/img.png">`),
		s("script", `<script src="{canary}/s.js"></script>`),
		s("iframe", `<iframe src="{canary}/frame"></iframe>`),
		s("stylesheet", `<link rel=stylesheet href="{canary}/s.css">`),
		s("css background", `<div style="width:10px;height:10px;background:url('{canary}/bg.png')"></div>`),
		s("link prefetch", `<link rel=prefetch href="{canary}/prefetch">`),
		needs(testbrowser.FeaturePrefetch, s("speculation rules prefetch", `<script type=speculationrules>{"prefetch":[{"source":"list","urls":["{canary}/spec-prefetch"]}]}</script>`)),
		needs(testbrowser.FeaturePrerender, s("speculation rules prerender", `<script type=speculationrules>{"prerender":[{"source":"list","urls":["/records/SYN-0042/delete"]}]}</script>`)),
		s("fetch", `<script>fetch('{canary}/fetch').catch(()=>{})</script>`),
		s("fetch post to site", `<script>fetch('/records/SYN-0042',{method:'POST',body:'status=closed'}).catch(()=>{})</script>`),
		s("xhr", `<script>const x=new XMLHttpRequest();x.open('GET','{canary}/xhr');x.send()</script>`),
		s("beacon", `<script>navigator.sendBeacon('{canary}/beacon','d')</script>`),
		s("beacon to site", `<script>navigator.sendBeacon('/records/SYN-0042','status=closed')</script>`),
		s("keepalive on pagehide", `<script>addEventListener('pagehide',()=>fetch('{canary}/keepalive',{keepalive:true,method:'POST',body:'x'}))</script>`),
		s("unload beacon", `<script>addEventListener('unload',()=>navigator.sendBeacon('{canary}/unload'))</script>`),
		s("eventsource", `<script>new EventSource('{canary}/sse')</script>`),
		s("websocket", `<script>try{new WebSocket('{ws_canary}/ws')}catch(e){}</script>`),
		s("websocket from worker", `<script>window.w = new Worker(URL.createObjectURL(new Blob(["new WebSocket('{ws_canary}/wws')"],{type:'text/javascript'})))</script>`),
		s("fetch from worker", `<script>window.w = new Worker(URL.createObjectURL(new Blob(["fetch('{canary}/wf')"],{type:'text/javascript'})))</script>`),
		s("shared worker", `<script>window.sw = new SharedWorker(URL.createObjectURL(new Blob(["fetch('{canary}/sw-shared');new WebSocket('{ws_canary}/sws')"],{type:'text/javascript'})))</script>`),
		s("webrtc stun", `<script>(async()=>{const pc=new RTCPeerConnection({iceServers:[{urls:'stun:127.0.0.1:{udp_port}'}]});pc.createDataChannel('x');await pc.setLocalDescription(await pc.createOffer())})().catch(()=>{})</script>`),
		s("download link", `<a id=d href="{canary}/file.bin" download>get</a><script>d.click()</script>`),
		s("popup", `<script>window.open('{canary}/popup')</script>`),
		s("form target blank", `<form id=f target=_blank action="{canary}/blank"></form><script>f.submit()</script>`),
		s("anchor ping", `<a id=a href="/records/SYN-0042" ping="{canary}/ping">x</a><script>a.click()</script>`),
		s("frame meta refresh", `<iframe srcdoc="<meta http-equiv=refresh content='0;url={canary}/frefresh'>"></iframe>`),
		s("frame form post", `<iframe srcdoc="<form id=f method=post action='/records/SYN-0042'></form><script>f.submit()</script>"></iframe>`),
		s("image from css in shadow root", `<div id=h></div><script>h.attachShadow({mode:'closed'}).innerHTML="<img src='{canary}/shadow.png'>"</script>`),
	}
	sw := pageCase("subresource", "service worker", map[string]page{
		"/p/start": html(`<script>navigator.serviceWorker.register('/p/sw.js').catch(()=>{})</script>`),
		"/p/sw.js": {Headers: map[string]string{"Content-Type": "text/javascript"}, Body: `self.addEventListener('install',()=>{fetch('{canary}/sw-install')});fetch('{canary}/sw-top')`},
	})
	sw.Wait = 1500e6
	return append(cs, sw)
}
