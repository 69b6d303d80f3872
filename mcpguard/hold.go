package mcpguard

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/browser-agent/browser-agent/audit"
	"github.com/browser-agent/browser-agent/bridge"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/proxy"
)

// The write mode (issue 43, docs/guard-write-mode.md): the agent fills in and presses, a person
// commits. The guard's egress proxy holds every POST the policy refuses only as a write
// (proxy.WithHold); a person approves or refuses each on the guard's approval page (loopback, a
// per-run token in its path), and an approval names the request's digest: the proxy sends exactly
// the bytes it holds, once. No answer in time is a refusal. The client learns only "held for a
// person", then "approved" or "refused".

// reasonStopped refuses what is still held when the guard stops.
const reasonStopped = "the guard stopped"

// DefaultHoldTimeout is how long a held write waits for a person.
const DefaultHoldTimeout = 2 * time.Minute

// approvals are the writes held for a person, and the page where a person decides them.
type approvals struct {
	timeout  time.Duration
	payments []string // the policy's payment origins, beside BuiltinPaymentOrigins

	token string
	logf  func(string, ...any)
	srv   *http.Server
	url   string // the approval page

	mu      sync.Mutex
	next    int
	pending map[int]*pendingHold
	notes   []string    // for the client's next result
	events  []holdEvent // for the audit store, under the next step the guard records
	forms   []pageForm  // the page's forms read before the last click (labels.go)
}

// holdEvent is one audit row of the write mode: metadata only, never a body or a value.
type holdEvent struct {
	kind   string // one of the Rule* of a hold
	id     int    // 0 for a write refused without being offered
	method string
	url    string // redacted by the policy when recorded
	reason string
}

// Rules of the write mode's audit rows.
const (
	RuleHold         = "guard.hold"          // a write held for a person: id, digest, field count
	RuleHoldApproved = "guard.hold.approved" // a person approved it on the approval page
	RuleHoldRefused  = "guard.hold.refused"  // a person refused it, or it carried a credential or card
	RuleHoldTimeout  = "guard.hold.timeout"  // no answer in time, or the request or guard ended
	RuleHoldRelease  = "guard.hold.release"  // handed back to the egress proxy to send once
)

type pendingHold struct {
	id     int
	held   *proxy.Held
	labels map[string]heldLabel // by field name; nil when the page's form was not found
	answer chan string          // "" approves
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
		case p.answer <- reasonStopped:
		default:
		}
	}
}

// hold is the proxy's HoldFunc: it shows the write on the page and waits for a person. A write
// to a payment origin (BuiltinPaymentOrigins and the policy's), or one that carries a credential
// or a card (a field the bridge's detection names so, or a number that passes the card checksum),
// is refused without being offered: a person signs in or pays themselves.
func (a *approvals) hold(ctx context.Context, h *proxy.Held) string {
	if paymentOrigin(h.URL, a.payments) {
		a.mu.Lock()
		a.notes = append(a.notes, fmt.Sprintf("refused: %s %s is a payment origin: %s", h.Method, originPath(h.URL), takeOver))
		a.events = append(a.events, holdEvent{RulePayment, 0, h.Method, h.URL, "refused without being offered: a payment origin"})
		a.mu.Unlock()
		a.logf("guard: write refused without a hold: %s %s is a payment origin", h.Method, originPath(h.URL))
		return "a payment origin: " + takeOver
	}
	if why := carriesCredential(h); why != "" {
		a.mu.Lock()
		a.notes = append(a.notes, fmt.Sprintf("refused: %s %s carries %s: a person signs in or pays themselves", h.Method, originPath(h.URL), why))
		a.events = append(a.events, holdEvent{RuleHoldRefused, 0, h.Method, h.URL, "refused without being offered: carries " + kindOf(why)})
		a.mu.Unlock()
		a.logf("guard: write refused without a hold: %s %s carries %s", h.Method, originPath(h.URL), why)
		return "carries " + why
	}
	a.mu.Lock()
	labels := labelsFor(a.forms, h)
	a.next++
	p := &pendingHold{id: a.next, held: h, labels: labels, answer: make(chan string, 1)}
	a.pending[p.id] = p
	where := originPath(h.URL)
	a.notes = append(a.notes, fmt.Sprintf("held for a person: %s %s (hold %d)", h.Method, where, p.id))
	a.events = append(a.events, holdEvent{RuleHold, p.id, h.Method, h.URL, fmt.Sprintf("hold %d: %s, digest %s, %d field(s)", p.id, h.Method, h.Digest, len(bodyFields(h)))})
	a.mu.Unlock()
	a.logf("guard: hold %d: %s %s, digest %s: approve or refuse at %s", p.id, h.Method, where, h.Digest, a.url)
	var why string
	rule := RuleHoldTimeout
	select {
	case why = <-p.answer:
		if why != reasonStopped {
			rule = RuleHoldRefused
		}
	case <-time.After(a.timeout):
		why = "no answer from a person in " + a.timeout.String()
	case <-ctx.Done():
		why = "the request ended before a person answered"
	}
	a.mu.Lock()
	delete(a.pending, p.id)
	if why == "" {
		a.notes = append(a.notes, fmt.Sprintf("hold %d approved by a person: sent once", p.id))
		a.events = append(a.events,
			holdEvent{RuleHoldApproved, p.id, h.Method, h.URL, fmt.Sprintf("hold %d approved on the approval page", p.id)},
			holdEvent{RuleHoldRelease, p.id, h.Method, h.URL, fmt.Sprintf("hold %d released to the egress proxy: sent once", p.id)})
	} else {
		a.notes = append(a.notes, fmt.Sprintf("hold %d refused: %s", p.id, why))
		a.events = append(a.events, holdEvent{rule, p.id, h.Method, h.URL, fmt.Sprintf("hold %d refused: %s", p.id, why)})
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

// takeEvents returns the audit rows since the last call.
func (a *approvals) takeEvents() []holdEvent {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.events
	a.events = nil
	return e
}

// kindOf is what a refusal of carriesCredential names without the field's name: "a card number"
// or "a credential field".
func kindOf(why string) string {
	k, _, _ := strings.Cut(why, " (")
	return k
}

// originPath is u's origin and path, without its query.
func originPath(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Scheme + "://" + p.Host + p.Path
}

// previewField is one field of a held form, as a person sees it on the page: its name in the
// body, the label the page gives it ("" when unknown), its value or "hidden".
type previewField struct{ Name, Label, Value string }

// bodyFields are a held write's fields in body order: a urlencoded form's, a multipart form's
// (a file shown by its size), or a JSON object's (nested keys joined by "."). A body of another
// kind is one field, "(body)", saying its size.
func bodyFields(h *proxy.Held) []previewField {
	ct, params, _ := mime.ParseMediaType(h.ContentType)
	switch {
	case strings.HasSuffix(ct, "json") || (ct == "" && json.Valid(h.Body) && len(bytes.TrimSpace(h.Body)) > 0 && bytes.TrimSpace(h.Body)[0] == '{'):
		var v any
		if json.Unmarshal(h.Body, &v) == nil {
			var out []previewField
			flattenJSON("", v, &out)
			return out
		}
	case ct == "multipart/form-data":
		mr := multipart.NewReader(bytes.NewReader(h.Body), params["boundary"])
		var out []previewField
		for {
			part, err := mr.NextPart()
			if err != nil {
				if err == io.EOF {
					return out
				}
				break
			}
			b, _ := io.ReadAll(io.LimitReader(part, proxy.MaxHoldBody))
			if part.FileName() != "" {
				out = append(out, previewField{Name: part.FormName(), Value: fmt.Sprintf("a file of %d bytes", len(b))})
			} else {
				out = append(out, previewField{Name: part.FormName(), Value: string(b)})
			}
		}
	case ct == "" || ct == "application/x-www-form-urlencoded" || ct == "text/plain":
		var out []previewField
		ok := true
		for _, kv := range strings.Split(string(h.Body), "&") {
			if kv == "" {
				continue
			}
			k, v, _ := strings.Cut(kv, "=")
			k, err1 := url.QueryUnescape(k)
			v, err2 := url.QueryUnescape(v)
			if err1 != nil || err2 != nil {
				ok = false
				break
			}
			out = append(out, previewField{Name: k, Value: v})
		}
		if ok {
			return out
		}
	}
	return []previewField{{Name: "(body)", Value: fmt.Sprintf("%d bytes of %s, not a form", len(h.Body), policy.Cut(h.ContentType, 64))}}
}

// flattenJSON lists v's leaves under dotted names.
func flattenJSON(name string, v any, out *[]previewField) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			n := k
			if name != "" {
				n = name + "." + k
			}
			flattenJSON(n, x[k], out)
		}
	case []any:
		for i, e := range x {
			flattenJSON(fmt.Sprintf("%s[%d]", name, i), e, out)
		}
	default:
		b, _ := json.Marshal(x)
		s := string(b)
		if str, ok := x.(string); ok {
			s = str
		}
		*out = append(*out, previewField{Name: name, Value: s})
	}
}

// credentialName says whether a body field's name is one the bridge's credential detection calls
// a sign-in, verification or card field. A JSON field is judged by its last key.
func credentialName(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	return bridge.CredentialField(bridge.Control{Tag: "input", Type: "text", Names: []string{name}})
}

// preview lists a held write's fields for the person, each with the label the page's form gives
// it (labels, by name; nil: none known); a field the bridge's credential detection calls a
// sign-in, verification or card field (by its name, or by the page's field itself), or whose
// value passes the card checksum, is shown as "hidden".
func preview(h *proxy.Held, labels map[string]heldLabel) []previewField {
	out := bodyFields(h)
	for i, f := range out {
		l := labels[f.Name]
		out[i].Label = l.label
		if l.secret || credentialName(f.Name) != "" || hasCard(f.Value) {
			out[i].Value = "hidden"
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
	fields := bodyFields(h)
	for _, f := range fields {
		raw += "\n" + f.Value
	}
	if hasCard(raw) {
		return "a card number"
	}
	for _, f := range fields {
		if credentialName(f.Name) != "" {
			return "a credential field (" + f.Name + ")"
		}
	}
	return ""
}

// hasCard says whether s holds a run of 13 to 19 digits that passes the Luhn checksum.
func hasCard(s string) bool {
	for _, m := range cardNumberRE.FindAllString(s, -1) {
		if luhn(m) {
			return true
		}
	}
	return false
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

// pageTmpl is the approval page. It reads on a phone as on a desktop (a viewport, one column,
// long names and digests broken anywhere); every value is escaped by html/template: field names
// and values come from the page and are shown only to the person.
var pageTmpl = template.Must(template.New("approvals").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>browser-agent guard: writes held for you</title>
<style>
body{font:16px/1.4 system-ui,sans-serif;margin:0 auto;padding:1rem;max-width:48rem;color:#111;background:#fafafa}
h1{font-size:1.4rem;margin:.5rem 0}
p.lead{color:#444;margin-top:0}
section{background:#fff;border:1px solid #bbb;border-radius:8px;padding:.75rem 1rem;margin:1rem 0}
h2{font-size:1.1rem;margin:.25rem 0 .75rem;overflow-wrap:anywhere}
.m{font-weight:700;color:#8a3b00}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;vertical-align:top;padding:.35rem .5rem;border-top:1px solid #e3e3e3;overflow-wrap:anywhere}
th{width:35%;font-weight:600}
th .n{font-weight:400;color:#666;font-size:.85rem}
td.hidden{color:#666;font-style:italic}
.digest{font-size:.8rem;color:#555}
code{overflow-wrap:anywhere;word-break:break-all}
form{display:flex;flex-wrap:wrap;gap:.5rem;margin-top:.75rem}
button{font:inherit;padding:.6rem 1rem;border-radius:6px;border:1px solid #666;cursor:pointer;flex:1 1 12rem}
button.ok{background:#0b6b2f;color:#fff;border-color:#0b6b2f}
button.no{background:#fff;color:#8b0000;border-color:#8b0000}
</style></head>
<body><h1>Writes held for you</h1>
<p class="lead">The agent filled these in; nothing is sent until you approve. Approve sends exactly what is shown, once.</p>
{{range .}}<section><h2>Hold {{.ID}}: <span class="m">{{.Method}}</span> {{.Where}}</h2>
<table>{{range .Fields}}<tr><th>{{if .Label}}{{.Label}} <span class="n">({{.Name}})</span>{{else}}{{.Name}}{{end}}</th>{{if eq .Value "hidden"}}<td class="hidden">hidden</td>{{else}}<td>{{.Value}}</td>{{end}}</tr>{{end}}</table>
<p class="digest">Digest <code>{{.Digest}}</code></p>
<form method="post" action="decide"><input type="hidden" name="id" value="{{.ID}}"><input type="hidden" name="digest" value="{{.Digest}}">
<button class="ok" name="verdict" value="approve">Approve: send this once</button> <button class="no" name="verdict" value="refuse">Refuse</button></form></section>
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
			rows = append(rows, row{p.id, p.held.Method, originPath(p.held.URL), p.held.Digest, preview(p.held, p.labels)})
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

// ToolHold is the tool of the write mode's audit rows.
const ToolHold = "hold"

// recordHolds records the write mode's events since the last call under step n: metadata only
// (id, method, origin, path, digest, field count, the decision), never a body or a value.
// Called with mu held.
func (g *Guard) recordHolds(ctx context.Context, n int) error {
	for _, e := range g.holds.takeEvents() {
		if g.runID == "" || g.cfg.Store == nil {
			return nil
		}
		verd := policy.Deny
		if e.kind == RuleHoldApproved || e.kind == RuleHoldRelease {
			verd = policy.Allow
		}
		en := policy.Entry{N: n, Method: e.method, Verdict: verd, Rule: e.kind, Reason: e.reason, Layer: policy.LayerCoordinator}
		en.Origin, en.Path = policy.OriginPath(g.cfg.Policy.LogURL(e.url))
		if err := g.cfg.Store.AddStep(ctx, audit.Step{RunID: g.runID, Tool: ToolHold, Entry: en}); err != nil {
			return err
		}
	}
	return nil
}

// modeLine is the first sentence of the guard's instructions to the client: what the mode lets
// the agent do.
func (g *Guard) modeLine() string {
	if g.holds == nil {
		return "A browser behind a policy: only the approved sites are reachable, nothing is submitted or written. "
	}
	return "A browser behind a policy: only the approved sites are reachable; a form's write is held until a person approves it " +
		"(results say \"held for a person\", then \"approved\" or \"refused\"), and paying is a person's. "
}
