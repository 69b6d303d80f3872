package adversarial

import (
	"net/url"
	"strings"
)

// Naive guards the policy replaces. Each URL case shows one of them fooled, and the unguarded
// browser then reaching the canary or a write route with the same URL.

// nPrefix allows a URL that starts with the site's origin.
func nPrefix(e *env, u string) bool { return strings.HasPrefix(u, e.Site) }

// nContains allows a URL that mentions the site's origin.
func nContains(e *env, u string) bool { return strings.Contains(u, e.Site) }

// nAfterAt takes the host to be what follows the last "@" (or "//"), up to the next "/".
func nAfterAt(e *env, u string) bool {
	h := u
	if i := strings.LastIndex(h, "@"); i >= 0 {
		h = h[i+1:]
	} else if i := strings.Index(h, "//"); i >= 0 {
		h = h[i+2:]
	}
	if i := strings.IndexAny(h, "/?#"); i >= 0 {
		h = h[:i]
	}
	return h == "127.0.0.1:"+e.SitePort
}

// nDenyLiteral denies the canary service by its literal host and port (a deny list), as Go's
// net/url reads them.
func nDenyLiteral(e *env, u string) bool {
	p, err := url.Parse(u)
	if err != nil {
		return true // what it cannot parse it lets through
	}
	h := strings.ToLower(p.Hostname())
	return !((h == "127.0.0.1" || h == "localhost" || h == "::1") && p.Port() == e.CanaryPort)
}

// nDenyAddr denies the canary service by its literal address "127.0.0.1:port", as net/url reads it.
func nDenyAddr(e *env, u string) bool {
	p, err := url.Parse(u)
	return err != nil || p.Host != "127.0.0.1:"+e.CanaryPort
}

// nRelative treats every URL without "://" as a same-site relative link.
func nRelative(e *env, u string) bool { return !strings.Contains(u, "://") }

// nWriteRaw allows the site's URLs unless the raw text contains a write word, case-sensitively.
func nWriteRaw(e *env, u string) bool {
	if !strings.HasPrefix(u, e.Site+"/") {
		return false
	}
	p, err := url.Parse(u)
	if err != nil {
		return true
	}
	for _, w := range []string{"delete", "remove", "edit", "update", "confirm", "reset"} {
		if strings.Contains(p.EscapedPath(), w) {
			return false
		}
	}
	return true
}

// nRoutePrefix allows the site's URLs whose raw path is under /p/ (the hostile pages' route).
func nRoutePrefix(e *env, u string) bool { return strings.HasPrefix(u, e.Site+"/p/") }

// urlCase opens raw (after a site page, so that relative forms resolve) and gives up. The control:
// the naive guard lets it through, and the unguarded browser then goes there from a site page.
func urlCase(name, raw string, naive func(*env, string) bool) *tcase {
	return &tcase{
		Name: name, Family: "url",
		Steps: []string{open("{site}/records/SYN-0042"), open(raw), read, cannot},
		Control: func(x *ctl) {
			u := x.e.x(raw)
			if !naive(x.e, u) {
				x.t.Logf("naive guard not fooled by %q", u)
				return
			}
			browserGo(x, u)
		},
	}
}

// browserGo navigates as the page would: from a site page for web schemes (location.href), and
// browser-initiated for the schemes a page cannot navigate to.
func browserGo(x *ctl, u string) {
	low := strings.ToLower(strings.TrimSpace(u))
	if strings.HasPrefix(low, "file:") || strings.HasPrefix(low, "view-source:") || strings.HasPrefix(low, "data:") {
		x.nav(u)
		return
	}
	x.nav(x.e.Site + "/records/SYN-0042")
	within(8e9, func() { x.page.Evaluate(`u => { location.href = u }`, u) })
	x.settle()
	if x.e.canaryHits.Load()+x.e.mutations.Load() == 0 {
		x.nav(u) // as a browser-initiated navigation (a naive agent's goto)
	}
}

func urlCases() []*tcase {
	cs := []*tcase{
		// userinfo
		urlCase("userinfo site as user", "http://127.0.0.1:{site_port}@127.0.0.1:{canary_port}/u", nPrefix),
		urlCase("userinfo canary behind backslash", `http://127.0.0.1:{canary_port}\@127.0.0.1:{site_port}/u`, nAfterAt),
		urlCase("fragment at sign", "http://127.0.0.1:{canary_port}#@127.0.0.1:{site_port}/", nAfterAt),
		// backslashes, tabs, newlines, relative forms
		urlCase("backslash authority", `http:\\127.0.0.1:{canary_port}\x?{site}`, nContains),
		urlCase("slash backslash relative", `/\127.0.0.1:{canary_port}/x`, nRelative),
		urlCase("protocol relative", `//127.0.0.1:{canary_port}/x`, nRelative),
		urlCase("tab in write word", "{site}/records/SYN-0042/de\tlete", nWriteRaw),
		urlCase("newline in write word", "{site}/records/SYN-0042/rem\nove", nWriteRaw),
		// encoded write words and dot segments
		urlCase("percent encoded write word", "{site}/records/SYN-0042/%64elete", nWriteRaw),
		urlCase("upper case write word", "{site}/records/SYN-0042/DeleteAll", nWriteRaw),
		urlCase("write word in query value", "{site}/records/SYN-0042?action=remove", nWriteRaw),
		urlCase("encoded dot segments", "{site}/p/%2e%2e/records/SYN-0042/delete", nRoutePrefix),
		urlCase("backslash dot segments", `{site}/p/..\records\SYN-0042\cancel`, nRoutePrefix),
		// IPv4 forms, IPv6, IDNA
		urlCase("ipv4 decimal", "http://2130706433:{canary_port}/x", nDenyLiteral),
		urlCase("ipv4 hex dotted", "http://0x7f.0.0.1:{canary_port}/x", nDenyLiteral),
		urlCase("ipv4 octal", "http://0177.0.0.1:{canary_port}/x", nDenyLiteral),
		urlCase("localhost", "http://localhost:{canary_port}/x", nDenyAddr),
		urlCase("port leading zeros", "http://127.0.0.1:0{canary_port}/x", nDenyLiteral),
		urlCase("idna fullwidth digits", "http://１２７.０.０.１:{canary_port}/x", nDenyLiteral),
		urlCase("idna fullwidth localhost", "http://ｌｏｃａｌｈｏｓｔ:{canary_port}/x", nDenyLiteral),
		// other schemes
		urlCase("javascript scheme", "javascript:fetch('{canary}/js')//{site}", nContains),
		urlCase("javascript scheme write", "javascript:fetch('/records/SYN-0042',{method:'POST'})//{site}", nContains),
		urlCase("data scheme html", `data:text/html,<script>location='{canary}/d'</script>{site}`, nContains),
		urlCase("view-source scheme", "view-source:{canary}/vs?{site}", nContains),
		urlCase("file scheme", "file://{secret_file}?{site}", nContains),
	}
	ws := urlCase("ws scheme", "{ws_canary}/ws?{site}", nContains)
	ws.Control = func(x *ctl) {
		u := x.e.x("{ws_canary}/ws?{site}")
		if nContains(x.e, u) {
			x.nav(x.e.Site + "/records/SYN-0042")
			within(5e9, func() { x.page.Evaluate(`u => { new WebSocket(u) }`, u) })
			x.settle()
		}
	}
	cs = append(cs, ws)
	for _, c := range cs {
		c.NoReach = true
	}
	return cs
}
