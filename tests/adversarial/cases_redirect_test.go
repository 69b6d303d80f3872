package adversarial

import (
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
)

func redirect(code int, loc string) page {
	return page{Status: code, Headers: map[string]string{"Location": loc}}
}

func html(body string) page { return page{Body: "<!doctype html><title>page</title>" + body} }

// pageCase serves pages (the first one at /p/start) and visits /p/start.
func pageCase(fam, name string, pages map[string]page, then ...string) *tcase {
	return &tcase{Name: name, Family: fam, Pages: pages, Steps: visit("/p/start", then...)}
}

func one(fam, name string, p page, then ...string) *tcase {
	return pageCase(fam, name, map[string]page{"/p/start": p}, then...)
}

func redirectCases() []*tcase {
	r := func(name string, p page) *tcase { return one("redirect", name, p) }
	cs := []*tcase{
		r("302 to canary", redirect(302, "{canary}/r302")),
		r("307 to canary", redirect(307, "{canary}/r307")),
		r("307 to write route", redirect(307, "/records/SYN-0042/delete")),
		r("location backslashes", redirect(302, `\\127.0.0.1:{canary_port}/x`)),
		r("location protocol relative", redirect(302, "//127.0.0.1:{canary_port}/x")),
		r("location decimal ipv4", redirect(302, "http://2130706433:{canary_port}/x")),
		r("location localhost", redirect(302, "http://localhost:{canary_port}/x")),
		r("refresh header to canary", page{Headers: map[string]string{"Refresh": "0; url={canary}/refresh"}, Body: "<p>wait</p>"}),
		r("refresh header to write route", page{Headers: map[string]string{"Refresh": "0;url=/records/SYN-0042/delete"}, Body: "<p>wait</p>"}),
		r("meta refresh to canary", html(`<meta http-equiv="refresh" content="0;url={canary}/meta">`)),
		r("meta refresh to write route", html(`<meta http-equiv="refresh" content="0; URL='/records/SYN-0042/remove'">`)),
		r("script location to canary", html(`<script>location.href='{canary}/script'</script>`)),
		r("script location replace write", html(`<script>location.replace('/records/SYN-0042/delete')</script>`)),
		r("history push then reload", html(`<script>if(!location.pathname.includes('del')){history.pushState({},'','/records/SYN-0042/delete');location.reload()}</script>`)),
		r("form auto submit post", html(`<form id=f method=post action="/records/SYN-0042"><input name=status value=Closed></form><script>f.submit()</script>`)),
		r("frame navigates top", html(`<iframe srcdoc="<script>top.location='{canary}/top'</script>"></iframe>`)),
		r("base href hijack", html(`<base href="{canary}/"><script>location.href='records/SYN-0042'</script>`)),
		r("redirect to refresh chain", redirect(302, "/p/next")),
		pageCase("redirect", "chain of three then canary", map[string]page{
			"/p/start": redirect(302, "/p/b"), "/p/b": redirect(301, "/p/c"), "/p/c": redirect(307, "{canary}/chain"),
		}),
	}
	cs[len(cs)-2].Pages["/p/next"] = page{Headers: map[string]string{"Refresh": "0; url={canary}/next"}, Body: "x"}
	// A loop that leaves for the canary once the browser has gone round it twice.
	loop := &tcase{Name: "loop that exits to canary", Family: "redirect", Steps: visit("/p/l1"),
		Handlers: map[string]func(*env) http.HandlerFunc{}}
	var n atomic.Int64
	loopH := func(e *env) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if n.Add(1) > 6 {
				n.Store(0)
				http.Redirect(w, r, e.Canary+"/loop", http.StatusFound)
				return
			}
			next := "/p/l2"
			if r.URL.Path == "/p/l2" {
				next = "/p/l1"
			}
			http.Redirect(w, r, next, http.StatusFound)
		}
	}
	loop.Handlers["/p/l1"], loop.Handlers["/p/l2"] = loopH, loopH
	// Ten hops (over the policy's five) and then the canary.
	long := &tcase{Name: "ten hops then canary", Family: "redirect", Steps: visit("/p/hop"),
		Handlers: map[string]func(*env) http.HandlerFunc{"/p/hop": func(e *env) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				k, _ := strconv.Atoi(r.URL.Query().Get("n"))
				if k >= 10 {
					http.Redirect(w, r, e.Canary+"/hops", http.StatusFound)
					return
				}
				http.Redirect(w, r, fmt.Sprintf("/p/hop?n=%d", k+1), http.StatusFound)
			}
		}}}
	return append(cs, loop, long)
}
