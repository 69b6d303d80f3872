package guard_test

import (
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/internal/testkit/testutil"
)

// tripPages are a booking-like site: a search form and a details form that POST, a seat that is
// chosen by PUT, changed by PATCH and dropped by DELETE, and a payment page with card fields. On
// /trip-psp posts to a payment origin (the policy's payment_origins names the frame origin);
// /trip-note carries a card number in a hidden field. On
// /trip-sneaky the page changes the form under the person: it sends the details, sets the seats
// to 9 while that request waits, and once it is answered sends the form again as it now is.
const tripPages = `
/trip: <h1>Trips</h1><form method=post action=/trip-search><label>From <input name=from value=Lisbon></label><label>To <input name=to></label><button>Find trips</button></form>
/trip-details: <h1>Traveller</h1><form method=post action=/trip-details><label>Full name <input name=fullname></label><label>Seats <input name=seats value=1></label><button>Continue</button></form>
/trip-sneaky: <h1>Traveller</h1><form id=f><label>Full name <input name=fullname></label><label>Seats <input name=seats id=s value=1></label><button>Continue</button></form><p id=out>not sent</p><script>const f = document.getElementById('f'); const send = () => fetch('/trip-details', {method: 'POST', body: new URLSearchParams(new FormData(f))}); f.onsubmit = e => { e.preventDefault(); const p = send(); document.getElementById('s').value = '9'; p.then(r => { document.getElementById('out').textContent = 'sent ' + r.status; return send(); }).then(r => { document.getElementById('out').textContent = 'resent ' + r.status; }); };</script>
/trip-seat/12: <h1>Seat</h1><p id=out>no change</p><button onclick="fetch('/trip-seat/12', {method: 'PUT', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({seat: '12A-Qx7'})}).then(r => out.textContent = 'put ' + r.status)">Choose seat 12A</button><button onclick="fetch('/trip-seat/12', {method: 'PATCH', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({meal: 'veg'})}).then(r => out.textContent = 'patch ' + r.status)">Add a meal</button><button onclick="fetch('/trip-seat/12', {method: 'DELETE'}).then(r => out.textContent = 'delete ' + r.status)">Drop seat</button>
/trip-card: <h1>Payment</h1><form method=post action=/trip-card><label>Name on card <input name=ccname autocomplete=cc-name></label><label>Card number <input name=cardnumber autocomplete=cc-number></label><label>Security code <input name=cvc autocomplete=cc-csc></label><label>Account password <input type=password name=pw></label><button>Pay 120 EUR</button></form><button type=button onclick="this.textContent = 'terms shown'">Show terms</button>
/trip-psp: <h1>Pay with our partner</h1><form method=post action=FRAME_ORIGIN/inner><label>Full name <input name=fullname></label><button>Continue</button></form>
/trip-note: <h1>Saved card</h1><form method=post action=/trip-details><input type=hidden name=note value="4111 1111 1111 1111"><label>Full name <input name=fullname></label><button>Continue</button></form>
`

// holdReasonRE is a hold's audit row: its id, method, digest and field count.
var holdReasonRE = regexp.MustCompile(`^hold [0-9]+: (POST|PUT|PATCH), digest [0-9a-f]{64}, [0-9]+ field\(s\)$`)

// traveller is the name typed into the details forms: it must reach the site when a person
// approves, and never the audit store or the log.
const traveller = "Zebulon-Quux"

func TestGuardBookingHTTP(t *testing.T)  { testGuardBooking(t, "http") }
func TestGuardBookingHTTPS(t *testing.T) { testGuardBooking(t, "https") }

// testGuardBooking books a trip through the guard in write mode: each write waits for a person;
// unapproved nothing reaches the site, approved exactly the held bytes do, once; a page that
// changes the form after the approval sends nothing the person did not approve; a seat's PUT and
// PATCH are held like a POST, its DELETE refused and never offered; a card number or a password
// is typed by no agent. The audit store holds a row per hold, decision and release, with no body
// or value. Each beside its positive control through Playwright MCP unguarded.
func testGuardBooking(t *testing.T, scheme string) {
	s := startSite(t, scheme)
	g, page := guardedWrite(t, s)
	lastID := "0"
	t.Run("search: unapproved, nothing; approved, exactly one", func(t *testing.T) {
		g := g.with(t)
		find := func(to string) <-chan string {
			g.mustCall("browser_navigate", map[string]any{"url": s.URL + "/trip"})
			g.mustCall("browser_type", map[string]any{"target": g.ref("textbox", "To"), "element": "To", "text": to})
			done := make(chan string, 1)
			go func() {
				text, _ := g.call("browser_click", map[string]any{"target": g.ref("button", "Find trips"), "element": "Find trips"})
				done <- text
			}()
			return done
		}
		done := find("Faro")
		id, digest := heldAfter(t, page, lastID)
		// The person sees each field by the label the page's form gives it, read by the guard in
		// its own isolated world, and its name.
		if p := approvalPage(t, page); !strings.Contains(p, `<th>To <span class="n">(to)</span></th><td>Faro</td>`) || !strings.Contains(p, `<th>From <span class="n">(from)</span></th><td>Lisbon</td>`) {
			t.Errorf("the approval page does not show the held fields by their labels:\n%s", p)
		}
		if n := s.count("POST /trip-search"); n != 0 {
			t.Errorf("%d searches reached the site while held, want 0", n)
		}
		decide(t, page, id, digest, "refuse")
		<-done
		g.call("browser_snapshot", nil)
		if got := s.sent("POST /trip-search"); len(got) != 0 {
			t.Errorf("refused: the site received %q, want nothing", got)
		}
		done = find("Porto")
		id, digest = heldAfter(t, page, id)
		if st := decide(t, page, id, digest, "approve"); st != http.StatusSeeOther {
			t.Errorf("approval: status %d, want 303", st)
		}
		<-done
		lastID = id
		testutil.Eventually(10*time.Second, func() bool { return len(s.sent("POST /trip-search")) > 0 })
		g.call("browser_snapshot", nil)
		if got := s.sent("POST /trip-search"); !slices.Equal(got, []string{"from=Lisbon&to=Porto"}) {
			t.Errorf("approved: the site received %q, want exactly [from=Lisbon&to=Porto]", got)
		}
	})
	t.Run("details: the page changes the form after approval", func(t *testing.T) {
		g := g.with(t)
		g.mustCall("browser_navigate", map[string]any{"url": s.URL + "/trip-sneaky"})
		g.mustCall("browser_type", map[string]any{"target": g.ref("textbox", "Full name"), "element": "Full name", "text": traveller})
		g.mustCall("browser_click", map[string]any{"target": g.ref("button", "Continue"), "element": "Continue"})
		id1, d1 := heldAfter(t, page, lastID)
		if !strings.Contains(approvalPage(t, page), "seats") {
			t.Errorf("the approval page does not show the held form's fields")
		}
		if st := decide(t, page, id1, d1, "approve"); st != http.StatusSeeOther {
			t.Errorf("approval: status %d, want 303", st)
		}
		// The page, answered, sends the form again as it now is (9 seats): a new request, a new
		// digest. The person's approval named the first: bound to it, it sends nothing now.
		id2, d2 := heldAfter(t, page, id1)
		lastID = id2
		if d2 == d1 {
			t.Errorf("the changed form has the approved digest")
		}
		if st := decide(t, page, id2, d1, "approve"); st != http.StatusConflict {
			t.Errorf("the first approval's digest on the changed form: status %d, want 409", st)
		}
		decide(t, page, id2, d2, "refuse")
		testutil.Eventually(10*time.Second, func() bool { return strings.Contains(g.mustCall("browser_snapshot", nil), "resent 403") })
		if got, want := s.sent("POST /trip-details"), []string{"fullname=" + traveller + "&seats=1"}; !slices.Equal(got, want) {
			t.Errorf("the site received %q, want exactly the approved %q", got, want)
		}
	})
	t.Run("seat: PUT and PATCH held, DELETE refused unoffered", func(t *testing.T) {
		g := g.with(t)
		g.mustCall("browser_navigate", map[string]any{"url": s.URL + "/trip-seat/12"})
		g.mustCall("browser_click", map[string]any{"target": g.ref("button", "Choose seat 12A"), "element": "Choose seat 12A"})
		id, digest := heldAfter(t, page, lastID)
		if n := s.count("PUT /trip-seat/12"); n != 0 {
			t.Errorf("%d PUTs reached the site while held, want 0", n)
		}
		decide(t, page, id, digest, "approve")
		testutil.Eventually(10*time.Second, func() bool { return strings.Contains(g.mustCall("browser_snapshot", nil), "put 200") })
		g.mustCall("browser_click", map[string]any{"target": g.ref("button", "Add a meal"), "element": "Add a meal"})
		id, digest = heldAfter(t, page, id)
		lastID = id
		decide(t, page, id, digest, "refuse")
		testutil.Eventually(10*time.Second, func() bool { return strings.Contains(g.mustCall("browser_snapshot", nil), "patch 403") })
		g.mustCall("browser_click", map[string]any{"target": g.ref("button", "Drop seat"), "element": "Drop seat"})
		if !testutil.Eventually(10*time.Second, func() bool { return strings.Contains(g.mustCall("browser_snapshot", nil), "delete 403") }) {
			t.Errorf("the DELETE was not answered 403")
		}
		if strings.Contains(approvalPage(t, page), "DELETE") {
			t.Errorf("the DELETE was offered to a person")
		}
		if got := s.sent("PUT /trip-seat/12"); !slices.Equal(got, []string{`{"seat":"12A-Qx7"}`}) {
			t.Errorf("PUTs received %q, want exactly the approved one", got)
		}
		if n, m := s.count("PATCH /trip-seat/12"), s.count("DELETE /trip-seat/12"); n+m != 0 {
			t.Errorf("%d PATCH and %d DELETE reached the site, want 0", n, m)
		}
	})
	t.Run("payment: a card number or a password is typed by no agent", func(t *testing.T) {
		g := g.with(t)
		g.mustCall("browser_navigate", map[string]any{"url": s.URL + "/trip-card"})
		for _, f := range []struct{ name, text string }{{"Card number", "4111111111111111"}, {"Security code", "123"}, {"Account password", secret}} {
			text, isErr := g.call("browser_type", map[string]any{"target": g.ref("textbox", f.name), "element": f.name, "text": f.text})
			if !isErr || !strings.Contains(text, "guard.credential") {
				t.Errorf("typing into %s: got %q, want a guard.credential refusal", f.name, text)
			}
		}
	})
	t.Run("payment: refused whatever a person would approve", func(t *testing.T) {
		g := g.with(t)
		g.mustCall("browser_navigate", map[string]any{"url": s.URL + "/trip-card"})
		for _, c := range []struct {
			tool string
			args map[string]any
			rule string
		}{
			{"browser_click", map[string]any{"target": g.ref("button", "Pay 120 EUR"), "element": "Pay 120 EUR"}, "guard.money"},
			{"browser_click", map[string]any{"target": g.ref("button", "Show terms"), "element": "Show terms"}, "guard.card_page"},
			{"browser_type", map[string]any{"target": g.ref("textbox", "Name on card"), "element": "Name on card", "text": "Ana"}, "guard.c"},
			{"browser_press_key", map[string]any{"key": "Tab"}, "guard.card_page"},
		} {
			text, isErr := g.call(c.tool, c.args)
			if !isErr || !strings.Contains(text, `"rule":"`+c.rule) || !strings.Contains(text, "a person pays themselves") && c.rule != "guard.c" {
				t.Errorf("%s %v on the card page: got %q, want a %s refusal telling a person to pay", c.tool, c.args["element"], text, c.rule)
			}
		}
		if n := s.count("POST /trip-card"); n != 0 {
			t.Errorf("%d payments reached the site, want 0", n)
		}
		for _, p := range []struct{ path, want, sent string }{
			{"/trip-psp", "is a payment origin", "POST /inner"},
			{"/trip-note", "carries a card number", "POST /trip-details"},
		} {
			before := len(s.sent(p.sent))
			g.mustCall("browser_navigate", map[string]any{"url": s.URL + p.path})
			g.call("browser_click", map[string]any{"target": g.ref("button", "Continue"), "element": "Continue"})
			g.call("browser_snapshot", nil)
			if !g.saw(p.want) {
				t.Errorf("%s: the client was not told the write %s", p.path, p.want)
			}
			if strings.Contains(approvalPage(t, page), "Hold ") {
				t.Errorf("%s: the write was offered to a person", p.path)
			}
			if n := len(s.sent(p.sent)) - before; n != 0 {
				t.Errorf("%s: %d writes reached the site, want 0", p.path, n)
			}
		}
	})
	t.Run("audit: a row per hold, decision and release; no body, no value", func(t *testing.T) {
		g.cs.Close()
		_, steps := g.auditRun(t)
		count := map[string]int{}
		for _, st := range steps {
			if st.Tool != "hold" {
				continue
			}
			count[st.Rule]++
			t.Logf("step %d %s %s %s %s%s: %s", st.N, st.Tool, st.Verdict, st.Rule, st.Origin, st.Path, st.Reason)
			if st.Rule == "guard.hold" && (!holdReasonRE.MatchString(st.Reason) || st.Origin != s.URL) {
				t.Errorf("hold row %+v lacks its method, origin, digest or field count", st.Entry)
			}
		}
		// Held: 2 searches, 2 details, a PUT and a PATCH; approved and released: a search, the
		// first details, the PUT; refused: the rest, and the write carrying a card.
		// Refused unoffered: the write to the payment origin and the one carrying a card.
		want := map[string]int{"guard.hold": 6, "guard.hold.approved": 3, "guard.hold.release": 3, "guard.hold.refused": 4, "guard.payment": 1}
		for r, n := range want {
			if count[r] != n {
				t.Errorf("%d %s rows, want %d (all: %v)", count[r], r, n, count)
			}
		}
		raw, _ := os.ReadFile(g.db)
		for _, v := range []string{traveller, "12A-Qx7", "Porto", secret} {
			if strings.Contains(string(raw), v) || strings.Contains(g.stderr.String(), v) {
				t.Errorf("the value %q reached the audit store or the log", v)
			}
		}
	})
	t.Run("control", func(t *testing.T) {
		u := unguarded(t, s).with(t)
		before := len(s.sent("POST /trip-details"))
		u.mustCall("browser_navigate", map[string]any{"url": s.URL + "/trip-sneaky"})
		u.mustCall("browser_click", map[string]any{"target": u.ref("button", "Continue"), "element": "Continue"})
		if !testutil.Eventually(10*time.Second, func() bool { return len(s.sent("POST /trip-details")) >= before+2 }) {
			t.Errorf("unguarded: the page did not send its form twice: the changed-form check proves nothing")
		} else if got := s.sent("POST /trip-details")[before+1]; got != "fullname=&seats=9" {
			t.Errorf("unguarded: the page's second send %q, want the changed form (seats=9)", got)
		}
		u.mustCall("browser_navigate", map[string]any{"url": s.URL + "/trip-seat/12"})
		for _, b := range []string{"Choose seat 12A", "Add a meal", "Drop seat"} {
			u.mustCall("browser_click", map[string]any{"target": u.ref("button", b), "element": b})
		}
		if !testutil.Eventually(10*time.Second, func() bool {
			return s.count("PUT /trip-seat/12") == 2 && s.count("PATCH /trip-seat/12") == 1 && s.count("DELETE /trip-seat/12") == 1
		}) {
			t.Errorf("unguarded: the seat's PUT, PATCH and DELETE did not all reach the site")
		}
		for _, p := range []struct{ path, sent string }{{"/trip-psp", "POST /inner"}, {"/trip-note", "POST /trip-details"}} {
			before := len(s.sent(p.sent))
			u.mustCall("browser_navigate", map[string]any{"url": s.URL + p.path})
			clicked := make(chan struct{})
			go func() {
				u.call("browser_click", map[string]any{"target": u.ref("button", "Continue"), "element": "Continue"})
				close(clicked)
			}()
			if !testutil.Eventually(10*time.Second, func() bool { return len(s.sent(p.sent)) > before }) {
				t.Errorf("unguarded: %s did not post: its refusal proves nothing", p.path)
			}
			<-clicked // the form's navigation ends before the next
		}
		u.mustCall("browser_navigate", map[string]any{"url": s.URL + "/trip-card"})
		u.mustCall("browser_click", map[string]any{"target": u.ref("button", "Show terms"), "element": "Show terms"})
		u.mustCall("browser_press_key", map[string]any{"key": "Tab"})
		for _, f := range []struct{ name, text string }{{"Card number", "4111111111111111"}, {"Security code", "123"}, {"Account password", secret}} {
			u.mustCall("browser_type", map[string]any{"target": u.ref("textbox", f.name), "element": f.name, "text": f.text})
		}
		go u.call("browser_click", map[string]any{"target": u.ref("button", "Pay 120 EUR"), "element": "Pay 120 EUR"})
		if !testutil.Eventually(10*time.Second, func() bool { return len(s.sent("POST /trip-card")) > 0 }) {
			t.Fatalf("unguarded: the payment form did not post")
		}
		if got := s.sent("POST /trip-card")[0]; !strings.Contains(got, "cardnumber=4111111111111111") || !strings.Contains(got, "pw="+secret) {
			t.Errorf("unguarded: the typed card number and password are not in the posted form %q", got)
		}
	})
}

// heldAfter is the first write held on the approval page with an id above after; "" when none
// shows.
func heldAfter(t *testing.T, page, after string) (id, digest string) {
	t.Helper()
	var m []string
	testutil.Eventually(10*time.Second, func() bool {
		for _, h := range holdRE.FindAllStringSubmatch(approvalPage(t, page), -1) {
			if len(h[1]) > len(after) || (len(h[1]) == len(after) && h[1] > after) {
				m = h
				return true
			}
		}
		return false
	})
	if m == nil {
		// Not fatal: what reached the site without a hold is the caller's to report.
		t.Errorf("nothing held on the approval page after hold %s", after)
		return "", ""
	}
	return m[1], m[2]
}

func approvalPage(t *testing.T, page string) string {
	t.Helper()
	resp, err := http.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
