package demosite

import (
	"encoding/json"
	"net/http"
)

// RecordState is the admin view of one record: both registries and the flags tests compare.
type RecordState struct {
	ID         string  `json:"id"`
	A          *Record `json:"a"` // registry A, current; nil when deleted
	B          *Record `json:"b"` // registry B
	Conflicts  bool    `json:"conflicts"`
	Restricted bool    `json:"restricted"`
	Deleted    bool    `json:"deleted"`
}

// State returns the admin view of a seeded record; false when the ID was never seeded.
func (s *Site) State(id string) (RecordState, bool) {
	b, ok := s.SourceB(id)
	if !ok {
		return RecordState{}, false
	}
	st := RecordState{
		ID:         id,
		B:          &b,
		Conflicts:  s.Conflicts(id),
		Restricted: s.Restricted(id),
		Deleted:    s.Deleted(id),
	}
	if a, ok := s.Record(id); ok {
		st.A = &a
	}
	return st, true
}

// AdminHandler returns the admin API, meant for a separate loopback listener:
//
//	GET  /mutations     {"mutations": N}
//	GET  /requests      the public site's request log as a JSON list
//	POST /reset         restores the seeded data and clears counters and the log
//	GET  /records/{id}  the record as RecordState JSON
func (s *Site) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /mutations", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]int64{"mutations": s.Mutations()})
	})
	mux.HandleFunc("GET /requests", func(w http.ResponseWriter, r *http.Request) {
		reqs := s.Requests()
		if reqs == nil {
			reqs = []LoggedRequest{}
		}
		writeJSON(w, http.StatusOK, reqs)
	})
	mux.HandleFunc("POST /reset", func(w http.ResponseWriter, r *http.Request) {
		s.Reset()
		writeJSON(w, http.StatusOK, map[string]bool{"reset": true})
	})
	mux.HandleFunc("GET /records/{id}", func(w http.ResponseWriter, r *http.Request) {
		st, ok := s.State(r.PathValue("id"))
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such record"})
			return
		}
		writeJSON(w, http.StatusOK, st)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not found"})
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"error":"encoding failed"}` + "\n"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
