package web

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"github.com/browser-agent/browser-agent/web/internal/demostate"
)

// WhyRestarted ends a run that was waiting in the queue when the server stopped.
const WhyRestarted = "the server restarted before this run started; start it again"

// restore opens the visit log, when there is one, and reads it: the salt of visitor hashes, the
// visits of the window and the runs left in the queue by the last process (they end, saying why).
func (s *Server) restore() error {
	if s.visitDB == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if s.visitLog, err = demostate.Open(ctx, *s.visitDB); err != nil {
		return err
	}
	salt, err := s.visitLog.Salt(ctx)
	if err != nil {
		return err
	}
	s.salt = salt
	now := s.clock()
	visits, err := s.visitLog.VisitsSince(ctx, now.Add(-s.limits.Window))
	if err != nil {
		return err
	}
	for _, v := range visits {
		if v.Live {
			s.adm.visits[v.Visitor] = append(s.adm.visits[v.Visitor], v.At)
		} else {
			s.adm.played[v.Visitor] = append(s.adm.played[v.Visitor], v.At)
		}
	}
	queued, err := s.visitLog.Queued(ctx)
	if err != nil {
		return err
	}
	for _, q := range queued {
		p, _ := s.preset(q.Preset)
		r := newRun(q.ID, q.Visitor, q.QueuedAt, RunInfo{Preset: q.Preset, Title: p.Title, Model: s.modelName})
		r.finish(errorResult(r.snapshot().RunInfo, now.UTC(), WhyRestarted))
		s.reg.add(r, s.limits.KeepRuns)
		if err := s.visitLog.Dequeue(ctx, q.ID); err != nil {
			return err
		}
	}
	return nil
}

// persistAdmission writes a new run to the visit log: the visit and, when it waits, its place in
// the queue. A write that fails is logged; the in-memory limits still hold for this process.
func (s *Server) persistAdmission(r *run, at time.Time, live, queued bool) {
	if s.visitLog == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.visitLog.AddVisit(ctx, demostate.Visit{Visitor: r.visitor, At: at, Live: live}); err != nil {
		s.logf("web: visit log: %v", err)
	}
	if queued {
		if err := s.visitLog.Enqueue(ctx, demostate.QueuedRun{ID: r.id, Visitor: r.visitor, Preset: r.snapshot().Preset, QueuedAt: at}); err != nil {
			s.logf("web: visit log: %v", err)
		}
	}
}

// visitor is the key r's visitor is counted under: visitorKey of the client address, hashed with
// the visit log's salt when there is one (so no address is stored).
func (s *Server) visitor(r *http.Request) string {
	k := visitorKey(clientAddr(r, s.trusted))
	if s.salt == nil {
		return k
	}
	m := hmac.New(sha256.New, s.salt)
	m.Write([]byte(k))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// plural writes "1 live run", "5 live runs".
func plural(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %ss", n, one)
}
