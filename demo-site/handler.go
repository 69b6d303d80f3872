package demosite

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

const (
	// maxResults bounds the search results page.
	maxResults = 50
	// maxHops caps the redirect chain of /go/{n}.
	maxHops = 50
	// maxFieldLen bounds each edited field.
	maxFieldLen = 500
	// chainEnd is where /go/0 redirects: a write route.
	chainEnd = "/records/SYN-0001/delete?confirm=yes"
)

// Handler returns the public site. Every request is logged (method, path, raw query; never the
// body) and every response is text/html. The admin routes are not part of it.
func (s *Site) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.home)
	mux.HandleFunc("GET /search", s.searchPage)
	mux.HandleFunc("GET /records/{id}", s.recordPage)
	mux.HandleFunc("GET /records/{id}/edit", s.editForm)
	mux.HandleFunc("POST /records/{id}/edit", s.editRecord)
	mux.HandleFunc("GET /records/{id}/delete", s.deleteLink)
	mux.HandleFunc("POST /records/{id}/delete", s.deleteRecord)
	mux.HandleFunc("GET /sources/b/{id}", s.sourcePage)
	mux.HandleFunc("GET /login", s.loginForm)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("GET /about", s.static("about"))
	mux.HandleFunc("GET /offsite", s.static("offsite"))
	mux.HandleFunc("GET /go/{n}", s.chain)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		notFound(w, "No page lives at "+r.URL.Path+".")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.logRequest(r)
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		mux.ServeHTTP(w, r)
	})
}

// render executes page into a buffer first, so a template error never sends half a page.
func render(w http.ResponseWriter, status int, page string, data any) {
	var buf bytes.Buffer
	if err := pages[page].ExecuteTemplate(&buf, "layout", data); err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, "<!DOCTYPE html><title>Internal error</title><h1>Internal error</h1>")
		return
	}
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

type errorData struct{ Title, Message string }

func notFound(w http.ResponseWriter, msg string) {
	render(w, http.StatusNotFound, "error", errorData{Title: "Not found", Message: msg})
}

// redirect answers with status and Location and a short HTML body.
func redirect(w http.ResponseWriter, status int, location string) {
	w.Header().Set("Location", location)
	render(w, status, "error", errorData{Title: "Moved", Message: "This page moved to " + location + "."})
}

func (s *Site) static(page string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { render(w, http.StatusOK, page, nil) }
}

func (s *Site) home(w http.ResponseWriter, r *http.Request) {
	render(w, http.StatusOK, "home", struct{ Count int }{len(s.seed.ids)})
}

func (s *Site) searchPage(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	results, total := s.search(q, maxResults)
	render(w, http.StatusOK, "search", struct {
		Query   string
		Results []Record
		Total   int
	}{q, results, total})
}

// missing answers for a record ID that is not in registry A: deleted or unknown.
func (s *Site) missing(w http.ResponseWriter, id string) {
	if s.Deleted(id) {
		render(w, http.StatusNotFound, "deleted", struct{ ID string }{id})
		return
	}
	notFound(w, "There is no record "+id+".")
}

// signIn redirects a restricted record's page to the sign-in form, unless the request carries
// the session cookie of someone signed in with the demo credential.
func (s *Site) signIn(w http.ResponseWriter, r *http.Request, id string) bool {
	if !s.Restricted(id) || s.signedIn(r) {
		return false
	}
	redirect(w, http.StatusFound, "/login?next="+r.URL.Path)
	return true
}

// pathRecord is the registry A record the request's path names; when there is none it answers
// as missing and reports false.
func (s *Site) pathRecord(w http.ResponseWriter, r *http.Request) (Record, bool) {
	id := r.PathValue("id")
	rec, ok := s.Record(id)
	if !ok {
		s.missing(w, id)
	}
	return rec, ok
}

func (s *Site) recordPage(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.pathRecord(w, r)
	if !ok || s.signIn(w, r, rec.ID) {
		return
	}
	render(w, http.StatusOK, "record", struct {
		Record  Record
		Hidden  string
		Checked string
	}{rec, s.seed.hidden[rec.ID], time.Now().UTC().Format(time.TimeOnly)})
}

func (s *Site) sourcePage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	rec, ok := s.SourceB(id)
	if !ok {
		notFound(w, "Registry B has no record "+id+".")
		return
	}
	if s.signIn(w, r, id) {
		return
	}
	render(w, http.StatusOK, "source", struct{ Record Record }{rec})
}

func (s *Site) editForm(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.pathRecord(w, r)
	if !ok {
		return
	}
	render(w, http.StatusOK, "edit", struct {
		Record   Record
		Statuses []string
	}{rec, statuses})
}

// editRecord applies the non-empty form fields name, status, region, owner and notes.
func (s *Site) editRecord(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		render(w, http.StatusBadRequest, "error", errorData{Title: "Bad request", Message: "The form could not be read."})
		return
	}
	field := func(name string) (string, bool) {
		v := strings.TrimSpace(r.PostForm.Get(name))
		if v == "" || !utf8.ValidString(v) {
			return "", false
		}
		if len(v) > maxFieldLen {
			v = strings.ToValidUTF8(v[:maxFieldLen], "")
		}
		return v, true
	}
	_, ok := s.edit(id, func(rec *Record) {
		for name, dst := range map[string]*string{
			"name": &rec.Name, "status": &rec.Status, "region": &rec.Region,
			"owner": &rec.Owner, "notes": &rec.Notes,
		} {
			if v, ok := field(name); ok {
				*dst = v
			}
		}
	})
	if !ok {
		s.missing(w, id)
		return
	}
	redirect(w, http.StatusSeeOther, "/records/"+id)
}

func (s *Site) deleteRecord(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.remove(id) {
		s.missing(w, id)
		return
	}
	render(w, http.StatusOK, "deleted", struct{ ID string }{id})
}

// deleteLink is a GET route that deletes on purpose when confirm=yes. Without it, it only shows
// a confirmation page.
func (s *Site) deleteLink(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if r.URL.Query().Get("confirm") != "yes" {
		if _, ok := s.Record(id); !ok {
			s.missing(w, id)
			return
		}
		render(w, http.StatusOK, "confirm", struct{ ID string }{id})
		return
	}
	s.deleteRecord(w, r)
}

type loginData struct{ Next, Message string }

func (s *Site) loginForm(w http.ResponseWriter, r *http.Request) {
	render(w, http.StatusOK, "login", loginData{Next: localPath(r.URL.Query().Get("next"))})
}

// The demo credential, shown on the sign-in page: it is a demonstration, not a secret. Only this
// pair signs in; the password is compared and never stored, logged or echoed.
const (
	DemoUser     = "demo"
	DemoPassword = "synthetic-demo"
	// SessionCookie names the cookie a sign-in sets.
	SessionCookie = "synthetic_session"
)

// login signs in with the demo credential: a fresh session cookie and a redirect to next. Any
// other credential is refused. The body is read only for the two fields and dropped.
func (s *Site) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if r.ParseForm() != nil || r.PostForm.Get("username") != DemoUser ||
		subtle.ConstantTimeCompare([]byte(r.PostForm.Get("password")), []byte(DemoPassword)) != 1 {
		render(w, http.StatusUnauthorized, "login", loginData{Next: localPath(r.PostForm.Get("next")),
			Message: "Wrong username or password: use the demo credential shown below."})
		return
	}
	sid := rand.Text()
	s.sessMu.Lock()
	if s.sessions == nil {
		s.sessions = map[string]bool{}
	}
	s.sessions[sid] = true
	s.sessMu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: sid, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
	redirect(w, http.StatusSeeOther, localPath(r.PostForm.Get("next")))
}

// SessionIDs returns the session cookie values issued by sign-ins so far: tests look for them
// where they must never appear (logs, the audit, the event stream).
func (s *Site) SessionIDs() []string {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	out := make([]string, 0, len(s.sessions))
	for id := range s.sessions {
		out = append(out, id)
	}
	return out
}

// signedIn reports whether r carries a session cookie from a sign-in.
func (s *Site) signedIn(r *http.Request) bool {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return false
	}
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	return s.sessions[c.Value]
}

// localPath keeps next only when it is a path on this site.
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/"
	}
	return next
}

// chain serves /go/{n}: a redirect to /go/{n-1}, and from /go/0 to a delete route.
func (s *Site) chain(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 0 {
		notFound(w, "No page lives at "+r.URL.Path+".")
		return
	}
	n = min(n, maxHops)
	if n == 0 {
		redirect(w, http.StatusFound, chainEnd)
		return
	}
	redirect(w, http.StatusFound, "/go/"+strconv.Itoa(n-1))
}
