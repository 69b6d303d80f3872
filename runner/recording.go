package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"time"

	"github.com/browser-agent/browser-agent/coordinator"
)

// RecordingFormat is the version of the recorded-run file format.
const RecordingFormat = 1

// Recording is a real run captured by "browser-agent record": its result and its timeline of
// steps and live-view frames. The server plays one instead of a live run when the daily spend cap
// is reached or the spend ledger cannot be read, and labels it recorded.
type Recording struct {
	Format     int        `json:"format"`
	Preset     string     `json:"preset"`
	RecordedAt time.Time  `json:"recorded_at"`
	Browser    string     `json:"browser"` // what drove the run, e.g. "Chromium 156.0.8078.108"
	Result     ResultJSON `json:"result"`
	Timeline   []Moment   `json:"timeline"`
}

// Validate checks a recording's shape: the format, a preset named, a status and a timeline whose
// steps are the result's. That the preset is one the server offers, with the result's task, is
// checked against the server's presets (New; OfPreset).
func (r Recording) Validate() error {
	if r.Format != RecordingFormat {
		return fmt.Errorf("format %d, want %d", r.Format, RecordingFormat)
	}
	if r.Preset == "" || r.Result.Preset != r.Preset {
		return fmt.Errorf("result is of preset %q; want preset %q", r.Result.Preset, r.Preset)
	}
	if r.Result.Status == "" {
		return errors.New("result has no status")
	}
	var steps []coordinator.Step
	last := int64(0)
	for i, m := range r.Timeline {
		if m.AtMS < last {
			return fmt.Errorf("timeline entry %d goes back in time", i+1)
		}
		last = m.AtMS
		if (m.Step != nil) == (m.Frame != nil || m.View != "") || (m.Frame != nil && m.View != "") || m.Phase != "" {
			return fmt.Errorf("timeline entry %d must hold exactly one of step, frame or view", i+1)
		}
		if m.Step != nil {
			steps = append(steps, *m.Step)
		}
	}
	if !slices.Equal(steps, r.Result.Steps) && !(len(steps) == 0 && len(r.Result.Steps) == 0) {
		return errors.New("timeline steps differ from the result's steps")
	}
	return nil
}

// OfPreset checks that r is a recording of one of ps: the preset it names, with its task.
func (r Recording) OfPreset(ps []coordinator.Preset) error {
	for _, p := range ps {
		if p.Name != r.Preset {
			continue
		}
		if r.Result.Task != p.Task {
			return fmt.Errorf("result is of preset %q, task %q; want preset %q, task %q", r.Result.Preset, r.Result.Task, p.Name, p.Task)
		}
		return nil
	}
	return fmt.Errorf("unknown preset %q", r.Preset)
}

// LoadRecordings reads and validates every *.json file at the top of fsys.
func LoadRecordings(fsys fs.FS) ([]Recording, error) {
	names, err := fs.Glob(fsys, "*.json")
	if err != nil {
		return nil, err
	}
	var out []Recording
	seen := map[string]string{}
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		var r Recording
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("recorded run %s: %w", name, err)
		}
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("recorded run %s: %w", name, err)
		}
		if prev, dup := seen[r.Preset]; dup {
			return nil, fmt.Errorf("recorded run %s: preset %q is also recorded in %s", name, r.Preset, prev)
		}
		seen[r.Preset] = path.Base(name)
		out = append(out, r)
	}
	return out, nil
}

// MarshalRecording encodes a recording as the file "browser-agent record" writes.
func MarshalRecording(r Recording) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Capture runs spec with Execute and returns the recording of it. The caller checks the result's
// status before keeping it.
func Capture(ctx context.Context, spec RunSpec) Recording {
	var timeline []Moment
	res, browser := Execute(ctx, spec, func(m Moment) {
		if m.Phase == "" {
			timeline = append(timeline, m)
		}
	})
	if browser == "" {
		browser = "none"
	}
	return Recording{
		Format: RecordingFormat, Preset: spec.Preset.Name, RecordedAt: time.Now().UTC(), Browser: browser,
		Result: ResultOf(res, spec.FieldOrder), Timeline: timeline,
	}
}
