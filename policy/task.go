package policy

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// MaxTaskLength is the longest task text accepted.
const MaxTaskLength = 500

// TaskError is a task that was rejected before any browser work.
type TaskError struct {
	Reason string
}

func (e *TaskError) Error() string { return "task rejected: " + e.Reason }

var (
	// Anything that looks like an attempt at a record ID: "SYN" followed by a separator or a digit.
	reRecordLike = regexp.MustCompile(`(?i)\bSYN(?:[-_ ]?\d[A-Za-z0-9_-]*|[-_][A-Za-z0-9_-]*)`)
	// A well-formed record ID.
	reRecordID = regexp.MustCompile(`(?i)^SYN-\d{4}$`)
)

// Task is an accepted task.
type Task struct {
	Text     string
	RecordID string // upper case, e.g. SYN-0042
}

// ParseTask accepts a task that names exactly one record ID, SYN- followed by four digits. No ID,
// several IDs, or a malformed one is rejected with a reason.
func ParseTask(text string) (Task, error) {
	if !utf8.ValidString(text) {
		return Task{}, &TaskError{Reason: "task is not valid UTF-8"}
	}
	t := strings.TrimSpace(text)
	if t == "" {
		return Task{}, &TaskError{Reason: "task is empty; name one record ID, e.g. \"Look up SYN-0042\""}
	}
	if utf8.RuneCountInString(t) > MaxTaskLength {
		return Task{}, &TaskError{Reason: fmt.Sprintf("task is longer than %d characters", MaxTaskLength)}
	}
	for _, r := range t {
		if r < 0x20 && r != '\t' && r != '\n' || r == 0x7f {
			return Task{}, &TaskError{Reason: "task contains control characters"}
		}
	}
	ids := map[string]bool{}
	var order []string
	for _, m := range reRecordLike.FindAllString(t, -1) {
		if !reRecordID.MatchString(m) {
			return Task{}, &TaskError{Reason: fmt.Sprintf("malformed record ID %q; record IDs are SYN- followed by four digits, e.g. SYN-0042", m)}
		}
		id := strings.ToUpper(m)
		if !ids[id] {
			order = append(order, id)
		}
		ids[id] = true
	}
	switch len(order) {
	case 0:
		return Task{}, &TaskError{Reason: "no record ID; name one, e.g. \"Look up SYN-0042\""}
	case 1:
		return Task{Text: t, RecordID: order[0]}, nil
	default:
		return Task{}, &TaskError{Reason: fmt.Sprintf("more than one record ID (%s); name exactly one", strings.Join(order, ", "))}
	}
}
