package web

import "sync"

// registry is the runs the API can name, under its own lock: every run admitted (live or played)
// and, beyond the KeepRuns newest, only those not finished.
type registry struct {
	mu    sync.Mutex
	runs  map[string]*run
	order []string // run IDs, oldest first
}

// add names r and forgets the oldest finished runs beyond keep.
func (g *registry) add(r *run, keep int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.runs[r.id] = r
	g.order = append(g.order, r.id)
	g.evictLocked(keep)
}

// evictLocked forgets the oldest finished runs beyond keep. g.mu is held.
func (g *registry) evictLocked(keep int) {
	for i := 0; len(g.order) > keep && i < len(g.order); {
		r := g.runs[g.order[i]]
		if r != nil && !r.isDone() {
			i++
			continue
		}
		delete(g.runs, g.order[i])
		g.order = append(g.order[:i], g.order[i+1:]...)
	}
}

// get is the run named id, nil when none.
func (g *registry) get(id string) *run {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.runs[id]
}

func (s *Server) lookup(id string) *run { return s.reg.get(id) }
