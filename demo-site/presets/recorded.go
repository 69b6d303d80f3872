package presets

import (
	"embed"
	"io/fs"
)

//go:embed recorded/*.json
var recorded embed.FS

// Recorded holds the presets' recorded real runs, one PRESET.json each, written by "browser-agent
// record" (recorded/README.md): serve hands them to web (web.WithRecordings), which plays one
// instead of a live run past the daily spend cap.
func Recorded() fs.FS {
	sub, err := fs.Sub(recorded, "recorded")
	if err != nil {
		panic("presets: " + err.Error()) // "recorded" is a valid path: fs.Sub does not fail on it
	}
	return sub
}
