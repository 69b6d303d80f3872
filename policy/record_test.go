package policy

import (
	"errors"
	"slices"
	"testing"
)

// demoRecord is the demo site's record key, as demo-site/policy.yaml declares it.
const demoRecord = `version: 1
sites:
  - origin: http://127.0.0.1:8081
    read: [/]
record:
  id:
    pattern: 'SYN-\d{4}'
    example: SYN-0042
    description: SYN- followed by four digits
  labels: [Record ID]
`

func mustParse(t *testing.T, src string) *Policy {
	t.Helper()
	p, err := Parse([]byte(src), "test")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseTask(t *testing.T) {
	p := mustParse(t, demoRecord)
	tests := []struct {
		name, task string
		wantID     string
		wantErr    string
	}{
		{"one id", "Look up SYN-0042", "SYN-0042", ""},
		{"lower case", "Look up syn-0042 please", "SYN-0042", ""},
		{"id twice", "SYN-0042, i.e. SYN-0042.", "SYN-0042", ""},
		{"no record", "Look up the newest record", "", `task rejected: no record ID; name one, e.g. "Look up SYN-0042"`},
		{"two records", "Compare SYN-0042 and SYN-0043", "", "task rejected: more than one record ID (SYN-0042, SYN-0043); name exactly one"},
		{"malformed record", "Look up SYN-42", "", `task rejected: malformed record ID "SYN-42"; record IDs are SYN- followed by four digits, e.g. SYN-0042`},
		{"malformed with a space", "Look up syn 0042", "", `task rejected: malformed record ID "syn 0042"; record IDs are SYN- followed by four digits, e.g. SYN-0042`},
		{"too many digits", "Look up SYN-00421", "", `task rejected: malformed record ID "SYN-00421"; record IDs are SYN- followed by four digits, e.g. SYN-0042`},
		{"malformed after a good one", "Compare SYN-0042 and SYN-42", "", `task rejected: malformed record ID "SYN-42"; record IDs are SYN- followed by four digits, e.g. SYN-0042`},
		{"empty", "  ", "", `task rejected: task is empty; name one record ID, e.g. "Look up SYN-0042"`},
		{"control character", "Look up SYN-0042\x00", "", "task rejected: task contains control characters"},
		{"inside a word", "Look up XSYN-0042", "", `task rejected: no record ID; name one, e.g. "Look up SYN-0042"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := p.ParseTask(tt.task)
			if tt.wantErr != "" {
				var te *TaskError
				if err == nil || err.Error() != tt.wantErr || !errors.As(err, &te) {
					t.Fatalf("ParseTask(%q):\n\tgot  %v\n\twant %s", tt.task, err, tt.wantErr)
				}
				return
			}
			if err != nil || got.RecordID != tt.wantID {
				t.Fatalf("ParseTask(%q): got %q, %v; want %q", tt.task, got.RecordID, err, tt.wantID)
			}
		})
	}
}

// TestParseTaskOtherShapes: the task's shape is the policy's, not the demo's.
func TestParseTaskOtherShapes(t *testing.T) {
	wiki := mustParse(t, `version: 1
sites: [{origin: "http://127.0.0.1:8081", read: [/]}]
record: {id: {pattern: 'WK-[A-Z]{2}-\d{3}', example: WK-LH-001}}
`)
	q := mustParse(t, `version: 1
sites: [{origin: "http://127.0.0.1:8081", read: [/]}]
record: {id: {pattern: 'Q[1-9]\d{0,8}', example: Q42, description: Q and a number}}
`)
	lower := mustParse(t, `version: 1
sites: [{origin: "http://127.0.0.1:8081", read: [/]}]
record: {id: {pattern: '[a-z]{3}\d{3}', example: abc123}}
`)
	tests := []struct {
		name    string
		pol     *Policy
		task    string
		wantID  string
		wantErr string
	}{
		{"wiki id", wiki, "What is WK-lh-017's height?", "WK-LH-017", ""},
		{"wiki malformed", wiki, "What is WK-LH-17?", "", `task rejected: malformed record ID "WK-LH-17"; record IDs are matched by the pattern ` + "`WK-[A-Z]{2}-\\d{3}`" + `, e.g. WK-LH-001`},
		{"wiki demo id is no id", wiki, "Look up SYN-0042", "", `task rejected: no record ID; name one, e.g. "Look up WK-LH-001"`},
		{"q id", q, "Who is Q42?", "Q42", ""},
		{"q two", q, "Q42 or Q1?", "", "task rejected: more than one record ID (Q42, Q1); name exactly one"},
		{"q malformed", q, "Who is Q-42?", "", `task rejected: malformed record ID "Q-42"; record IDs are Q and a number, e.g. Q42`},
		{"lower case kept", lower, "Look up ABC123", "abc123", ""},
		{"no letters prefix: found as a word only", lower, "Look up xabc123", "", `task rejected: no record ID; name one, e.g. "Look up abc123"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.pol.ParseTask(tt.task)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParseTask(%q):\n\tgot  %v\n\twant %s", tt.task, err, tt.wantErr)
				}
				return
			}
			if err != nil || got.RecordID != tt.wantID {
				t.Fatalf("ParseTask(%q): got %q, %v; want %q", tt.task, got.RecordID, err, tt.wantID)
			}
		})
	}
}

func TestParseTaskNoRecordKey(t *testing.T) {
	p := mustParse(t, "version: 1\nsites: [{origin: \"http://127.0.0.1:8081\", read: [/]}]\n")
	if _, err := p.ParseTask("Look up SYN-0042"); !errors.Is(err, ErrNoRecord) {
		t.Fatalf("ParseTask without a record key: got %v, want ErrNoRecord", err)
	}
	if p.Record() != nil {
		t.Errorf("Record: got %+v, want nil", p.Record())
	}
}

func TestRecordIDs(t *testing.T) {
	r := mustParse(t, demoRecord).Record()
	tests := []struct {
		in   string
		want []string
	}{
		{"SYN-0042 — Amber Ridge · Synthetic Records", []string{"SYN-0042"}},
		{"Registry B: syn-0042", []string{"SYN-0042"}},
		{"see SYN-0043, SYN-0042 and SYN-0043", []string{"SYN-0043", "SYN-0042"}},
		{"XSYN-0042 SYN-00421 SYN-0042x", nil},
		{"SYN-0042-B", []string{"SYN-0042"}},
		{"éSYN-0042", nil},
		{"", nil},
	}
	for _, tt := range tests {
		if got := r.IDs(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("IDs(%q):\n\tgot  %q\n\twant %q", tt.in, got, tt.want)
		}
	}
	if id, ok := r.Canonical(" syn-0042 "); !ok || id != "SYN-0042" {
		t.Errorf("Canonical: got %q, %v", id, ok)
	}
	if _, ok := r.Canonical("SYN-0042 SYN-0043"); ok {
		t.Error("Canonical accepted two identifiers")
	}
	if got := r.Labels; !slices.Equal(got, []string{"Record ID"}) {
		t.Errorf("Labels: got %q", got)
	}
}

func TestLoadRejectsBadRecord(t *testing.T) {
	tests := []struct{ file, want string }{
		{"bad_record_pattern_syntax.yaml", "testdata/bad_record_pattern_syntax.yaml:7: record.id.pattern: pattern `SYN-(\\d{4}` does not compile: error parsing regexp: missing closing ): `SYN-(\\d{4}`"},
		{"bad_record_example_mismatch.yaml", "testdata/bad_record_example_mismatch.yaml:8: record.id.example: example \"SYN-42\" does not match the pattern `SYN-\\d{4}`"},
		{"bad_record_no_example.yaml", "testdata/bad_record_no_example.yaml:7: record.id.example: missing; write one identifier the pattern matches, e.g. REC-0042"},
		{"bad_record_anchored.yaml", "testdata/bad_record_anchored.yaml:7: record.id.pattern: pattern `^SYN-\\d{4}$` must not hold ^, $, \\A, \\z or \\b: it is matched against a whole identifier"},
		{"bad_record_empty_match.yaml", "testdata/bad_record_empty_match.yaml:7: record.id.pattern: pattern `\\d*` matches the empty string"},
		{"bad_record_unknown_key.yaml", "testdata/bad_record_unknown_key.yaml:9: flags: unknown key"},
		{"bad_record_label.yaml", `testdata/bad_record_label.yaml:9: record.labels[0]: label " Record ID" is empty, longer than 200 bytes or has surrounding white space`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := Load("testdata/" + tt.file)
			var le *LoadError
			if err == nil || !errors.As(err, &le) || err.Error() != tt.want {
				t.Errorf("Load(%s):\n\tgot  %v\n\twant %s", tt.file, err, tt.want)
			}
		})
	}
}
