package testutil

import (
	"bufio"
	"io"
	"strings"
)

// Event is one Server-Sent Event: its name and its data line.
type Event struct {
	Name, Data string
}

// ReadEvents reads a Server-Sent Events stream to its end (one data line per event, as the web
// package writes them).
func ReadEvents(r io.Reader) []Event {
	var out []Event
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			name = v
		}
		if v, ok := strings.CutPrefix(line, "data: "); ok {
			out = append(out, Event{Name: name, Data: v})
		}
	}
	return out
}
