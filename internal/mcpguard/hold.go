package mcpguard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/proxy"
)

// The write mode (issue 43, docs/guard-write-mode.md): the agent fills in and presses, a person
// commits. The guard's egress proxy holds every POST the policy refuses only as a write
// (proxy.WithHold); a person approves or refuses each on the guard's approval page (loopback, a
// per-run token in its path), and an approval names the request's digest: the proxy sends exactly
// the bytes it holds, once. No answer in time is a refusal. The client learns only "held for a
// person", then "approved" or "refused".

// DefaultHoldTimeout is how long a held write waits for a person.
const DefaultHoldTimeout = 2 * time.Minute

// approvals are the writes held for a person, and the page where a person decides them.
type approvals struct {
	timeout time.Duration
	token   string
	logf    func(string, ...any)
	srv     *http.Server
	url     string // the approval page

	mu      sync.Mutex
	next    int
	pending map[int]*pendingHold
	notes   []string // for the client's next result
}

type pendingHold struct {
	id     int
	held   *proxy.Held
	answer chan string // "" approves
}

// startApprovals serves the approval page on addr (the policy's guard.approval.listen: loopback).
func startApprovals(addr string, timeout time.Duration, logf func(string, ...any)) (*approvals, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	if timeout <= 0 {
		timeout = DefaultHoldTimeout
	}
	b := make([]byte, 16)
	rand.Read(b)
	a := &approvals{timeout: timeout, token: hex.EncodeToString(b), logf: logf, pending: map[int]*pendingHold{}}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("approval page: %w", err)
	}
	// The policy refuses a listen address beyond loopback; a name that resolves elsewhere is
	// caught here, where the address is known.
	if ta, ok := ln.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("approval page: %s is not a loopback address: only this machine may approve a write", ln.Addr())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /"+a.token+"/", a.page)
	mux.HandleFunc("POST /"+a.token+"/decide", a.decide)
	a.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	a.url = "http://" + ln.Addr().String() + "/" + a.token + "/"
	go a.srv.Serve(ln)
	return a, nil
}

func (a *approvals) close() {
	if a == nil {
		return
	}
	a.srv.Close()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range a.pending {
		select {
		case p.answer <- "the guard stopped":
		default:
		}
	}
}

// hold is the proxy's HoldFunc: it shows the write on the page and waits for a person. A write
// that carries a credential or a card (a field the bridge's detection names so, or a number that
// passes the card checksum) is refused without being offered: a person signs in or pays
// themselves.
func (a *approvals) hold(ctx context.Context, h *proxy.Held) string {
	if why := carriesCredential(h); why != "" {
		a.mu.Lock()
		a.notes = append(a.notes, fmt.Sprintf("refused: %s %s carries %s: a person signs in or pays themselves", h.Method, originPath(h.URL), why))
		a.mu.Unlock()
		a.logf("guard: write refused without a hold: %s %s carries %s", h.Method, originPath(h.URL), why)
		return "carries " + why
	}
	a.mu.Lock()
	a.next++
	p := &pendingHold{id: a.next, held: h, answer: make(chan string, 1)}
	a.pending[p.id] = p
	where := originPath(h.URL)
	a.notes = append(a.notes, fmt.Sprintf("held for a person: %s %s (hold %d)", h.Method, where, p.id))
	a.mu.Unlock()
	a.logf("guard: hold %d: %s %s, digest %s: approve or refuse at %s", p.id, h.Method, where, h.Digest, a.url)
	var why string
	select {
	case why = <-p.answer:
	case <-time.After(a.timeout):
		why = "no answer from a person in " + a.timeout.String()
	case <-ctx.Done():
		why = "the request ended before a person answered"
	}
	a.mu.Lock()
	delete(a.pending, p.id)
	if why == "" {
		a.notes = append(a.notes, fmt.Sprintf("hold %d approved by a person: sent once", p.id))
	} else {
		a.notes = append(a.notes, fmt.Sprintf("hold %d refused: %s", p.id, why))
	}
	a.mu.Unlock()
	a.logf("guard: hold %d %s", p.id, map[bool]string{true: "approved", false: "refused: " + why}[why == ""])
	return why
}

// take returns the notes for the client since the last call.
func (a *approvals) take() []string {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.notes
	a.notes = nil
	return n
}

// originPath is u's origin and path, without its query.
func originPath(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Scheme + "://" + p.Host + p.Path
}

// previewField is one field of a held form, as a person sees it on the page.
type previewField struct{ Name, Value string }

// preview lists a urlencoded body's fields; a field the bridge's credential detection calls a
// sign-in, verification or card field is shown as "hidden".
func preview(h *proxy.Held) []previewField {
	vals, err := url.ParseQuery(string(h.Body))
	if err != nil {
		return []previewField{{"(body)", fmt.Sprintf("%d bytes, not a form", len(h.Body))}}
	}
	var out []previewField
	for name, vs := range vals {
		for _, v := range vs {
			if bridge.CredentialField(bridge.Control{Tag: "input", Type: "text", Names: []string{name}}) != "" {
				v = "hidden"
			}
			out = append(out, previewField{name, v})
		}
	}
	return out
}

// carriesCredential says what credential or card a held write carries, or "": the body's fields
// by name (the bridge's credential detection), and any run of 13 to 19 digits (spaces and dashes
// aside) in the body, raw or decoded, that passes the Luhn checksum.
func carriesCredential(h *proxy.Held) string {
	raw := string(h.Body)
	if d, err := url.QueryUnescape(raw); err == nil {
		raw += "\n" + d
	}
	for _, m := range cardNumberRE.FindAllString(raw, -1) {
		if luhn(m) {
			return "a card number"
		}
	}
	vals, _ := url.ParseQuery(string(h.Body))
	for name := range vals {
		if bridge.CredentialField(bridge.Control{Tag: "input", Type: "text", Names: []string{name}}) != "" {
			return "a credential field (" + name + ")"
		}
	}
	return ""
}

// cardNumberRE finds runs of 13 to 19 digits, spaces or dashes between them allowed.
var cardNumberRE = regexp.MustCompile(`[0-9](?:[ -]?[0-9]){12,18}`)

// luhn says whether the digits of s pass the Luhn checksum.
func luhn(s string) bool {
	sum, n := 0, 0
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if c < '0' || c > '9' {
			continue
		}
		d := int(c - '0')
		if n%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
		n++
	}
	return n >= 13 && sum%10 == 0
}

var pageTmpl = template.Must(template.New("approvals").Parse(`<!doctype html>
<html><head><meta name="viewport" content="width=device-width"><title>browser-agent guard: approvals</title>
<style>body{font:16px system-ui;margin:1rem;max-width:48rem}section{border:1px solid #999;padding:.5rem 1rem;margin:1rem 0}code{word-break:break-all}</style></head>
<body><h1>Writes held for you</h1>
{{range .}}<section><h2>Hold {{.ID}}: {{.Method}} {{.Where}}</h2>
<table>{{range .Fields}}<tr><th>{{.Name}}</th><td>{{.Value}}</td></tr>{{end}}</table>
<p>Digest <code>{{.Digest}}</code></p>
<form method="post" action="decide"><input type="hidden" name="id" value="{{.ID}}"><input type="hidden" name="digest" value="{{.Digest}}">
<button name="verdict" value="approve">Approve: send this once</button> <button name="verdict" value="refuse">Refuse</button></form></section>
{{else}}<p>Nothing is held.</p>{{end}}
</body></html>`))

func (a *approvals) page(w http.ResponseWriter, r *http.Request) {
	type row struct {
		ID                    int
		Method, Where, Digest string
		Fields                []previewField
	}
	a.mu.Lock()
	var rows []row
	for id := 1; id <= a.next; id++ {
		if p := a.pending[id]; p != nil {
			rows = append(rows, row{p.id, p.held.Method, originPath(p.held.URL), p.held.Digest, preview(p.held)})
		}
	}
	a.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	pageTmpl.Execute(w, rows)
}

// decide takes a person's answer: the hold's id, the digest they were shown, and the verdict. A
// digest that is not the held request's is refused: an approval is bound to exactly what is sent.
func (a *approvals) decide(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.Atoi(r.FormValue("id"))
	a.mu.Lock()
	p := a.pending[id]
	a.mu.Unlock()
	switch {
	case p == nil:
		http.Error(w, "no such hold (decided, or timed out)", http.StatusNotFound)
		return
	case r.FormValue("digest") != p.held.Digest:
		http.Error(w, "the held request is not the one you were shown: not sent", http.StatusConflict)
		return
	}
	why := "refused by a person"
	if r.FormValue("verdict") == "approve" {
		why = ""
	}
	select {
	case p.answer <- why:
	default:
	}
	http.Redirect(w, r, "./", http.StatusSeeOther)
}
