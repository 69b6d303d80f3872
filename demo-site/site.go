package demosite

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Options configures a Site. The zero value gives seed 1 and DefaultRecords records.
type Options struct {
	Seed    uint64 // 0 means 1
	Records int    // zero or negative means DefaultRecords
}

// LoggedRequest is one request the public site received. Bodies are never logged.
type LoggedRequest struct {
	Method string    `json:"method"`
	Path   string    `json:"path"`
	Query  string    `json:"query"` // raw query, with password-like values redacted
	Time   time.Time `json:"time"`
}

// maxLoggedRequests bounds the request log; the oldest entries are dropped first.
const maxLoggedRequests = 10000

// Site is the synthetic records website. It is safe for concurrent use.
type Site struct {
	seed dataset // immutable after New

	mu        sync.RWMutex
	records   map[string]Record // registry A, current
	deleted   map[string]bool
	mutations int64

	logMu    sync.Mutex
	requests []LoggedRequest

	sessMu   sync.Mutex
	sessions map[string]bool // session cookie values of people signed in with the demo credential
}

// New builds a site from opts. Two sites with equal options hold equal data.
func New(opts Options) *Site {
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	if opts.Records <= 0 {
		opts.Records = DefaultRecords
	}
	s := &Site{seed: generate(opts.Seed, opts.Records)}
	s.Reset()
	return s
}

// Reset restores the seeded data and clears the mutation counter and the request log.
func (s *Site) Reset() {
	s.mu.Lock()
	s.records = maps.Clone(s.seed.a)
	s.deleted = map[string]bool{}
	s.mutations = 0
	s.mu.Unlock()

	s.logMu.Lock()
	s.requests = nil
	s.logMu.Unlock()
}

// Mutations returns how many write requests changed the data since New or the last Reset.
func (s *Site) Mutations() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mutations
}

// IDs returns every seeded record ID in order, deleted ones included.
func (s *Site) IDs() []string { return slices.Clone(s.seed.ids) }

// Record returns the current registry A record, after mutations. Deleted records are not found.
func (s *Site) Record(id string) (Record, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.records[id]
	return r, ok
}

// SourceB returns the registry B record. Registry B is never mutated.
func (s *Site) SourceB(id string) (Record, bool) {
	r, ok := s.seed.b[id]
	return r, ok
}

// Conflicts reports whether the current registry A record and the registry B record differ.
// With the seeded data this holds for about 3% of records, always for ConflictID and never for
// LookupID; only Status and Owner ever differ. A deleted record does not conflict.
func (s *Site) Conflicts(id string) bool {
	a, ok := s.Record(id)
	if !ok {
		return false
	}
	b, ok := s.SourceB(id)
	return ok && a != b
}

// Restricted reports whether the record's pages require sign-in (a redirect to /login).
func (s *Site) Restricted(id string) bool { return s.seed.restricted[id] }

// Deleted reports whether a seeded record was deleted through a write route.
func (s *Site) Deleted(id string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.deleted[id]
}

// Requests returns a copy of the request log of the public site, oldest first.
func (s *Site) Requests() []LoggedRequest {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return slices.Clone(s.requests)
}

// logRequest appends r's method, path and redacted raw query. It never reads the body.
func (s *Site) logRequest(r *http.Request) {
	entry := LoggedRequest{
		Method: r.Method,
		Path:   r.URL.Path,
		Query:  redactQuery(r.URL.RawQuery),
		Time:   time.Now().UTC(),
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	if len(s.requests) >= maxLoggedRequests {
		s.requests = slices.Delete(s.requests, 0, len(s.requests)-maxLoggedRequests+1)
	}
	s.requests = append(s.requests, entry)
}

// redactQuery replaces the value of every parameter whose name looks like a secret, so a
// credential sent in a URL never reaches the log. Other parameters stay exactly as sent.
func redactQuery(raw string) string {
	if raw == "" {
		return ""
	}
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		key, _, hasValue := strings.Cut(p, "=")
		k := strings.ToLower(key)
		if hasValue && (strings.Contains(k, "pass") || strings.Contains(k, "pwd") ||
			strings.Contains(k, "secret") || strings.Contains(k, "token")) {
			parts[i] = key + "=REDACTED"
		}
	}
	return strings.Join(parts, "&")
}

// edit applies changes to a current record. It reports false when the record does not exist.
func (s *Site) edit(id string, change func(*Record)) (Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[id]
	if !ok {
		return Record{}, false
	}
	change(&r)
	r.ID = id
	s.records[id] = r
	s.mutations++
	return r, true
}

// remove deletes a current record. It reports false when the record does not exist.
func (s *Site) remove(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.records[id]; !ok {
		return false
	}
	delete(s.records, id)
	s.deleted[id] = true
	s.mutations++
	return true
}

// search returns up to limit current records whose ID or Name contains q, ignoring case, and the
// total number of matches. A query naming one record ID puts that record first.
func (s *Site) search(q string, limit int) ([]Record, int) {
	q = strings.TrimSpace(q)
	if q == "" {
		return nil, 0
	}
	needle := strings.ToLower(q)
	exact := canonicalID(q)

	s.mu.RLock()
	defer s.mu.RUnlock()
	var first, rest []Record
	total := 0
	for _, id := range s.seed.ids {
		r, ok := s.records[id]
		if !ok {
			continue
		}
		switch {
		case id == exact:
			first = append(first, r)
		case strings.Contains(strings.ToLower(id), needle), strings.Contains(strings.ToLower(r.Name), needle):
			rest = append(rest, r)
		default:
			continue
		}
		total++
	}
	out := append(first, rest...)
	if len(out) > limit {
		out = out[:limit]
	}
	return out, total
}

// canonicalID turns "syn-42", "SYN 0042" or "SYN-0042" into "SYN-0042"; anything else gives "".
func canonicalID(q string) string {
	u := strings.ToUpper(strings.TrimSpace(q))
	rest, ok := strings.CutPrefix(u, "SYN")
	if !ok {
		return ""
	}
	rest = strings.TrimLeft(rest, "- ")
	if rest == "" || len(rest) > 9 {
		return ""
	}
	n := 0
	for _, c := range rest {
		if c < '0' || c > '9' {
			return ""
		}
		n = n*10 + int(c-'0')
	}
	if n == 0 {
		return ""
	}
	return recordID(n)
}
