package web

import (
	"sync"
	"time"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/runner"
)

// recentRuns is the latest live run of each preset that ended as expected, kept whole in memory
// and played for that preset from then on, under its own lock. The given recordings
// (Server.recordings) are set once in New and only read.
type recentRuns struct {
	mu       sync.Mutex
	byPreset map[string]runner.Recording
}

func (k *recentRuns) keep(rec runner.Recording) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.byPreset[rec.Preset] = rec
}

func (k *recentRuns) get(preset string) (runner.Recording, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec, ok := k.byPreset[preset]
	return rec, ok
}

// maxRecentSize bounds the frames kept of a live run for playing it again.
const maxRecentSize = 16 << 20

// keepRecent keeps a live run of a preset that ended as the preset expects, whole and in memory,
// as the recording played for that preset from now on (the latest real run). Nothing of it is
// written anywhere.
func (s *Server) keepRecent(preset coordinator.Preset, res coordinator.Result, browser string, timeline []runner.Moment, size int) {
	if preset.Name == "" || res.Status != preset.Expect || size > maxRecentSize || browser == "" {
		return
	}
	rec := runner.Recording{
		Format: runner.RecordingFormat, Preset: preset.Name, RecordedAt: res.EndedAt.UTC(), Browser: browser,
		Result: runner.ResultOf(res, s.fieldOrder), Timeline: timeline,
	}
	if rec.Validate() != nil {
		return
	}
	s.recent.keep(rec)
}

// recordingFor picks the recorded run played for a task: the preset's own, else the preset of the
// same record, else the first preset's (the demo's lookup).
func (s *Server) recordingFor(task string, preset coordinator.Preset) (runner.Recording, bool, bool) {
	if rec, ok := s.recording(preset.Name); ok && preset.Name != "" {
		return rec, false, true
	}
	t, _ := s.pol.ParseTask(task)
	for _, p := range s.offered {
		pt, _ := s.pol.ParseTask(p.Task)
		if rec, ok := s.recording(p.Name); ok && !p.Simulated && pt.RecordID == t.RecordID {
			return rec, rec.Result.Task != task, true
		}
	}
	if len(s.offered) == 0 {
		return runner.Recording{}, true, false
	}
	rec, ok := s.recording(s.offered[0].Name)
	return rec, true, ok
}

// recording is the recording of a preset: the latest live run of it (keepRecent), else the one
// given (WithRecordings).
func (s *Server) recording(preset string) (runner.Recording, bool) {
	if rec, ok := s.recent.get(preset); ok {
		return rec, true
	}
	rec, ok := s.recordings[preset]
	return rec, ok
}

// recorded labels a run that plays rec (ok: there is one) because of why.
func recorded(info *RunInfo, rec runner.Recording, other, ok bool, why string) {
	if !ok {
		info.Recorded = &RecordedInfo{Kind: KindPaused, Why: why}
		return
	}
	info.Recorded = &RecordedInfo{
		Kind: KindPaused, Why: why, Preset: rec.Preset, Task: rec.Result.Task, Model: rec.Result.Model, Browser: rec.Browser,
		RecordedAt: rec.RecordedAt, OtherTask: other,
	}
	info.Model = rec.Result.Model
	info.Simulated = rec.Result.Simulated
}

// startPlayback plays a recorded run in the background.
func (s *Server) startPlayback(r *run, rec runner.Recording, ok bool) {
	go func() {
		defer s.wg.Done()
		s.playback(r, rec, ok)
	}()
}

// playback plays a recorded run in place of a live one, paced like the real run. r's info already
// carries the recorded label.
func (s *Server) playback(r *run, rec runner.Recording, ok bool) {
	info := r.snapshot().RunInfo
	if !ok {
		r.finish(errorResult(info, s.clock().UTC(), "live runs are paused ("+info.Recorded.Why+") and no recorded run is available"))
		return
	}
	prev := int64(0)
	for _, m := range rec.Timeline {
		gap := time.Duration(float64(time.Duration(m.AtMS-prev)*time.Millisecond) * s.speed)
		prev = m.AtMS
		if gap > s.maxGap {
			gap = s.maxGap
		}
		if gap > 0 {
			t := time.NewTimer(gap)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				r.finish(stoppedResult(info, s.clock().UTC()))
				return
			}
		}
		r.moment(m)
	}
	r.finish(rec.Result)
}
