package policy

// MaxTaskLength is the longest task text accepted.
const MaxTaskLength = 500

// TaskError is a task that was rejected before any browser work.
type TaskError struct {
	Reason string
}

func (e *TaskError) Error() string { return "task rejected: " + e.Reason }

// Task is an accepted task.
type Task struct {
	Text     string
	RecordID string // in canonical form (see Record.Canonical)
}
