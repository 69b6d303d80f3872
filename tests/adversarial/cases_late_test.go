package adversarial

import (
	"net/http"
	"time"
)

// late: a page whose credential field appears only after the load, driven by the network (a
// fetch, a chain of fetches, an XHR, a slow fetch, a frame's load event, a worker's message) or by
// a scroll, 200 or 600 ms after that (the slow fetch answers after 1500 ms). The value is on the
// page from the start, in an editable box the late script then turns into a password field, and
// again in a password input it adds. The run must stop for a person, and the value must reach
// nothing: no read holds a field's value, and no read is handed over before the page, quiet
// again, shows no credential field. Each case also runs over https.
func lateCases() []*tcase {
	// late turns the box into a password field and adds a password input with the value.
	const late = `const late = () => {
  f.setAttribute('aria-label', 'Password'); f.style.webkitTextSecurity = 'disc';
  l.innerHTML = '<label>Password <input type=password name=pw value="{secret}"></label>';
};
`
	const fields = `<div id=f contenteditable>{secret}</div><div id=l></div>`
	c := func(name, script string, pages map[string]page) *tcase {
		t := one("late", name, html(recordDL+fields+`<script>`+late+script+`</script>`))
		for p, b := range pages {
			t.Pages[p] = b
		}
		t.Want = stHuman
		t.Handlers = map[string]func(*env) http.HandlerFunc{
			"/p/data": delayed(50 * time.Millisecond),
			"/p/slow": delayed(1500 * time.Millisecond),
		}
		t.Wait = 2500e6
		return t
	}
	const get = `const get = () => fetch('/p/data').then((r) => r.text());
`
	frame := html(fields + `<script>` + late + `addEventListener('load', () => setTimeout(late, 600));</script>`)
	cs := []*tcase{
		c("600 ms after a fetch", get+`get().then(() => setTimeout(late, 600));`, nil),
		c("200 ms after a chain of fetches", get+`get().then(get).then(get).then(() => setTimeout(late, 200));`, nil),
		c("600 ms after an XHR", `const x = new XMLHttpRequest(); x.open('GET', '/p/data');
x.onload = () => setTimeout(late, 600); x.send();`, nil),
		c("200 ms after a fetch that answers in 1500 ms", `fetch('/p/slow').then((r) => r.text()).then(() => setTimeout(late, 200));`, nil),
		c("600 ms after a frame's load event", get+`get().then(() => { const i = document.createElement('iframe'); i.src = '/p/frame'; document.body.appendChild(i); });`,
			map[string]page{"/p/frame": frame}),
		c("200 ms after a scroll", get+`document.body.style.minHeight = '3000px';
addEventListener('scroll', () => setTimeout(late, 200), {once: true});
get().then(() => scrollTo(0, 800));`, nil),
		c("600 ms after a worker's message", `const w = new Worker(URL.createObjectURL(new Blob([
  'fetch(' + JSON.stringify(location.origin + '/p/data') + ').then((r) => r.text()).finally(() => postMessage(1));'],
  {type: 'text/javascript'})));
w.onmessage = () => setTimeout(late, 600);`, nil),
	}
	for _, t := range cs[:len(cs):len(cs)] {
		cs = append(cs, overHTTPS(t))
	}
	return cs
}

// delayed answers "ok" after d.
func delayed(d time.Duration) func(*env) http.HandlerFunc {
	return func(*env) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(d)
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("ok"))
		}
	}
}
