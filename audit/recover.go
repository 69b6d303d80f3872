package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mattn/go-sqlite3"
)

// ReasonCrashed starts the reason of a run that RecoverCrashed ended: its process ended (killed,
// crashed, out of memory, or its end could not be written) while the run was still running.
const ReasonCrashed = "crashed"

// ProcessMarker returns what tells process pid apart from a later process that reuses its pid: the
// boot id and the process's start time in clock ticks since boot (/proc). It is "" where /proc is
// not available; then only the pid is compared.
func ProcessMarker(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold spaces: split after the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 {
		return ""
	}
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(boot)) + ":" + f[19]
}

// processAlive reports whether the process that wrote marker under pid still runs. A zombie counts
// as ended.
func processAlive(pid int, marker string) bool {
	if pid <= 0 {
		return false
	}
	if marker != "" {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return false
		}
		if i := strings.LastIndexByte(string(data), ')'); i >= 0 {
			if f := strings.Fields(string(data)[i+1:]); len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
				return false
			}
		}
		return ProcessMarker(pid) == marker
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// RecoverCrashed ends every run left running by a process that no longer exists: status
// StatusInterrupted, a reason that starts with ReasonCrashed, and as finished_at the time of its
// last committed step (its start when it has none). Open calls it, so that every command that opens
// the store leaves no dead run open. It returns the runs it ended.
func (s *Store) RecoverCrashed(ctx context.Context) ([]Run, error) {
	q := fmt.Sprintf("SELECT %s FROM runs WHERE %s = ? ORDER BY %s", strings.Join(runColumns, ", "), FieldStatus, FieldStartedAt)
	rows, err := s.db.QueryContext(ctx, q, StatusRunning)
	if err != nil {
		return nil, s.writeError("recover", err)
	}
	var dead []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("audit: recover: %w", err)
		}
		if s.db.pg && !onThisMachine(r.ProcStart) {
			continue // another machine's worker: the queue closes its runs if it died
		}
		if !processAlive(r.PID, r.ProcStart) {
			dead = append(dead, r)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit: recover: %w", err)
	}
	var out []Run
	for _, r := range dead {
		reason := fmt.Sprintf("%s: process %d ended before the run's end was recorded", ReasonCrashed, r.PID)
		if r.PID == 0 {
			reason = ReasonCrashed + ": the process that ran it ended before the run's end was recorded"
		}
		res, err := s.interrupt(ctx, r.ID, reason)
		if err != nil {
			return out, s.writeError("recover", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			r2, _, err := s.Run(ctx, r.ID)
			if err == nil {
				out = append(out, r2)
			}
		}
	}
	return out, nil
}

// interrupt ends run id as StatusInterrupted with reason, if it is still running, at the time of
// its last committed step (its start when it has none), with its step count from its steps. The
// status check in the WHERE makes it safe against a concurrent finish or recovery.
func (s *Store) interrupt(ctx context.Context, id, reason string) (sql.Result, error) {
	u := fmt.Sprintf(`UPDATE runs SET %[1]s = ?, %[2]s = ?,
		%[3]s = COALESCE((SELECT MAX(%[4]s) FROM steps WHERE %[5]s = runs.%[6]s AND %[4]s != ''), %[7]s),
		%[8]s = (SELECT COUNT(DISTINCT %[9]s) FROM steps WHERE %[5]s = runs.%[6]s AND %[10]s != 'request')
		WHERE %[6]s = ? AND %[1]s = ?`,
		FieldStatus, FieldReason, FieldFinishedAt, FieldRecordedAt, FieldRunID, FieldID, FieldStartedAt,
		FieldStepCount, FieldN, FieldTool)
	return s.db.ExecContext(ctx, u, StatusInterrupted, auditText(reason), id, StatusRunning)
}

// CheckReport is what Check found.
type CheckReport struct {
	Integrity []string `json:"integrity"` // PRAGMA integrity_check: ["ok"] when the file is sound
	Open      []Run    `json:"open"`      // runs without a terminal status, i.e. still running
	Alive     []bool   `json:"alive"`     // per Open run: its process still runs
}

// OK reports whether the file is sound and every run whose process ended has a terminal status.
func (c CheckReport) OK() bool {
	if len(c.Integrity) != 1 || c.Integrity[0] != "ok" {
		return false
	}
	for _, a := range c.Alive {
		if !a {
			return false
		}
	}
	return true
}

// Check runs SQLite's integrity check and lists the runs without a terminal status, saying of each
// whether its process still runs.
func (s *Store) Check(ctx context.Context) (CheckReport, error) {
	var rep CheckReport
	integrity := "PRAGMA integrity_check"
	if s.db.pg {
		integrity = "SELECT 'ok'" // PostgreSQL checks its own pages; there is no such pragma
	}
	rows, err := s.db.QueryContext(ctx, integrity)
	if err != nil {
		return rep, fmt.Errorf("audit: check: %w", err)
	}
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			rows.Close()
			return rep, fmt.Errorf("audit: check: %w", err)
		}
		rep.Integrity = append(rep.Integrity, line)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return rep, fmt.Errorf("audit: check: %w", err)
	}
	q := fmt.Sprintf("SELECT %s FROM runs WHERE %s = ? OR %s = '' ORDER BY %s", strings.Join(runColumns, ", "),
		FieldStatus, FieldStatus, FieldStartedAt)
	rows, err = s.db.QueryContext(ctx, q, StatusRunning)
	if err != nil {
		return rep, fmt.Errorf("audit: check: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return rep, fmt.Errorf("audit: check: %w", err)
		}
		rep.Open = append(rep.Open, r)
		rep.Alive = append(rep.Alive, r.Status == StatusRunning && processAlive(r.PID, r.ProcStart))
	}
	return rep, rows.Err()
}

// ErrUnwritable is what a WriteError unwraps to, besides its cause.
var ErrUnwritable = errors.New("audit store cannot be written")

// WriteError is a write the audit store refused because of the file or the disk: read-only, full,
// or failing. Its message is short, names the file and says what to do.
type WriteError struct {
	Path string
	Op   string // open, begin run, add step, finish run, recover
	Err  error
}

func (e *WriteError) Error() string {
	what, do := "cannot write", "check the file and its disk, or give another --db"
	var se sqlite3.Error
	switch {
	case errors.As(e.Err, &se) && se.Code == sqlite3.ErrFull, errors.Is(e.Err, syscall.ENOSPC), errors.Is(e.Err, syscall.EDQUOT),
		diskFull(e.Path):
		what, do = "disk full", "free space on its disk or give another --db"
	case errors.As(e.Err, &se) && se.Code == sqlite3.ErrReadonly, errors.Is(e.Err, os.ErrPermission), errors.Is(e.Err, syscall.EROFS):
		what, do = "read-only", "make it writable or give another --db"
	case errors.As(e.Err, &se) && (se.Code == sqlite3.ErrCantOpen || se.Code == sqlite3.ErrIoErr):
		what = "i/o error"
	case errors.As(e.Err, &se) && (se.Code == sqlite3.ErrCorrupt || se.Code == sqlite3.ErrNotADB):
		what, do = "damaged", "run browser-agent audit --check, or give another --db"
	}
	return fmt.Sprintf("%s: %s; %s", e.Path, what, do)
}

// diskFull reports whether the file system of path has no free block: SQLite reports some writes
// on a full disk (its shared-memory index) as a plain i/o error.
func diskFull(path string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(path), &st); err != nil {
		return false
	}
	return st.Bavail == 0
}

// Unwrap returns ErrUnwritable and the cause.
func (e *WriteError) Unwrap() []error { return []error{ErrUnwritable, e.Err} }

// Detail is the full message of the cause, for a debug log.
func (e *WriteError) Detail() string { return fmt.Sprintf("audit: %s %s: %v", e.Op, e.Path, e.Err) }

// writeError turns an error of the file or the disk into a *WriteError; other errors come back as
// they are.
func (s *Store) writeError(op string, err error) error {
	var we *WriteError
	if err == nil || errors.As(err, &we) {
		return err
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrFull, sqlite3.ErrReadonly, sqlite3.ErrCantOpen, sqlite3.ErrIoErr, sqlite3.ErrPerm,
			sqlite3.ErrCorrupt, sqlite3.ErrNotADB:
			return &WriteError{Path: s.path, Op: op, Err: err}
		}
		return err
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EROFS) || errors.Is(err, os.ErrPermission) {
		return &WriteError{Path: s.path, Op: op, Err: err}
	}
	return err
}
