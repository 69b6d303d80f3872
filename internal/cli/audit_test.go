package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/browser-agent/browser-agent/audit"
)

// TestAuditJSONEmptyLists: an empty list is [] in audit's JSON, never null: no runs, a check
// without open runs, a run without steps.
func TestAuditJSONEmptyLists(t *testing.T) {
	empty, _ := auditDB(t)
	one, ids := auditDB(t, audit.Run{RecordID: "SYN-0042"})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"audit", "--db", empty, "--json"}, `"runs":[]`},
		{[]string{"audit", "--db", empty, "--json", "--check"}, `"open":[]`},
		{[]string{"audit", "--db", one, "--json", ids[0]}, `"steps":[]`},
	} {
		if code, out, errOut := runCLI(t, tc.args...); code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%q: got %d %q %q; want 0 and %s", tc.args, code, out, errOut, tc.want)
		}
	}
}

// auditDB writes an audit database in a directory of its own with runs begun in it, and returns
// its path and the runs' ids.
func auditDB(t *testing.T, runs ...audit.Run) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.db")
	s, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids []string
	for _, r := range runs {
		id, err := s.BeginRun(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return path, ids
}
