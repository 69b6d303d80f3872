package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/demo-site/presets"
	"github.com/browser-agent/browser-agent/policy"
	"github.com/browser-agent/browser-agent/runner"
)

// DefaultRecordDir is where "browser-agent record" writes without --out: the files "serve" embeds.
const DefaultRecordDir = "demo-site/presets/recorded"

// recordCmd is "browser-agent record [flags]": run presets with the configured model and write
// each as a recorded run (result, step timeline, frames) for "serve" to play when live runs are
// paused.
func recordCmd(e *env, args []string) error {
	fs := newFlags(e, "record", "[--out DIR] [--model M] [--policy FILE] [--db FILE] [--preset NAME]... [--no-frames]")
	out := fs.String("out", DefaultRecordDir, "directory to write PRESET.json files to")
	polFile := policyFlag(fs, new(string))
	modelSpec := modelFlag(fs, new(string))
	dbFile := dbFlag(fs, new(string), "audit database", false)
	noFrames := fs.Bool("no-frames", false, "record no screenshots of the agent's browser")
	var names listFlag
	fs.Var(&names, "preset", "record only this preset (repeatable; default: all five)")
	if err := parseFlagsOnly(fs, args); err != nil {
		return err
	}
	var chosen []coordinator.Preset
	if len(names) == 0 {
		chosen = presets.All()
	}
	for _, n := range names {
		p, ok := presets.ByName(n)
		if !ok {
			return usageError("unknown preset %q; presets: %s", n, strings.Join(presetNames(), ", "))
		}
		chosen = append(chosen, p)
	}
	kind, arg, err := parseModelSpec(*modelSpec)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(*out); err != nil || !fi.IsDir() {
		return usageError("--out %s is not a directory", *out)
	}

	ctx, prep, err := startUp(e, watchSignalsOf(e), startSpec{db: *dbFile, policy: *polFile, kind: kind, arg: arg})
	if err != nil {
		return err
	}
	defer prep.Close()
	store, pol := prep.store, prep.pol

	var failed []string
	for _, p := range chosen {
		rec := runner.Capture(ctx, runner.RunSpec{
			Policy: pol, Task: p.Task, Preset: p, FieldOrder: presets.FieldOrder, ModelName: *modelSpec,
			Model: func() (coordinator.Model, error) { return buildModel(kind, arg, pol) },
			Launch: func(ctx context.Context, pol *policy.Policy) (coordinator.Browser, io.Closer, error) {
				return launchBrowser(ctx, pol)
			},
			Options: []coordinator.Option{coordinator.WithRecorder(store)},
			Frames:  !*noFrames,
		})
		frames := 0
		for _, m := range rec.Timeline {
			if m.Frame != nil {
				frames++
			}
		}
		res := rec.Result
		if res.Status != p.Expect {
			fmt.Fprintln(e.stderr, printable(fmt.Sprintf("record %s: ended %s (%s), want %s: not written", p.Name, res.Status, res.Reason, p.Expect)))
			failed = append(failed, p.Name)
			continue
		}
		data, err := runner.MarshalRecording(rec)
		if err != nil {
			return fmt.Errorf("record %s: %w", p.Name, err)
		}
		path := filepath.Join(*out, p.Name+".json")
		if err := writeFileAtomic(path, data); err != nil {
			return fmt.Errorf("record %s: %w", p.Name, err)
		}
		fmt.Fprintln(e.stdout, printable(fmt.Sprintf("%s: %s, %d steps, %d frames, model %s, %s -> %s", p.Name, res.Status, len(res.Steps), frames, res.Model, rec.Browser, path)))
	}
	if len(failed) > 0 {
		return fmt.Errorf("not recorded (unexpected status): %s", strings.Join(failed, ", "))
	}
	return nil
}

// writeFileAtomic writes data to path through a temporary file in the same directory.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
