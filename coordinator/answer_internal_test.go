package coordinator

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/browser-agent/browser-agent/policy"
)

// testRecord is the demo's record key, for policies written in tests.
const testRecord = "record:\n  id: {pattern: 'SYN-\\d{4}', example: SYN-0042}\n  labels: [Record ID]\n"

func TestParseFinal(t *testing.T) {
	tests := []struct {
		name, in string
		wantErr  string // "" for success
		wantID   string // for answers
		wantWhy  string // for cannot_answer
	}{
		{"answer", `{"record_id":"SYN-0042","fields":{"Status":"Active"},"sources":["http://h/records/SYN-0042"]}`, "", "SYN-0042", ""},
		{"answer in a json fence", "```json\n{\"record_id\":\"SYN-0042\",\"fields\":{\"Status\":\"Active\"},\"sources\":[\"u\"]}\n```", "", "SYN-0042", ""},
		{"answer in a bare fence", "```\n{\"cannot_answer\":\"denied\"}\n```", "", "", "denied"},
		{"cannot answer", `{"cannot_answer":"the page was denied"}`, "", "", "the page was denied"},
		{"prose", `The status is Active.`, "the message is not one JSON object", "", ""},
		{"prose before JSON", `Here you go: {"cannot_answer":"x"}`, "the message is not one JSON object", "", ""},
		{"two objects", `{"cannot_answer":"x"} {"cannot_answer":"y"}`, "the message is not one JSON object", "", ""},
		{"array", `[{"cannot_answer":"x"}]`, "the message is not one JSON object", "", ""},
		{"unknown key", `{"record_id":"SYN-0042","fields":{"S":"A"},"sources":["u"],"confidence":0.9}`, `unknown key "confidence"`, "", ""},
		{"key in another case", `{"Record_ID":"SYN-0042","fields":{"S":"A"},"sources":["u"]}`, `unknown key "Record_ID"`, "", ""},
		{"key twice", `{"record_id":"SYN-0042","record_id":"SYN-0043","fields":{"S":"A"},"sources":["u"]}`, `key "record_id" given twice`, "", ""},
		{"both answer and refusal", `{"record_id":"SYN-0042","fields":{"S":"A"},"sources":["u"],"cannot_answer":"x"}`, "cannot_answer must be the only key", "", ""},
		{"empty refusal", `{"cannot_answer":" "}`, "cannot_answer must be a non-empty string", "", ""},
		{"refusal not a string", `{"cannot_answer":true}`, "cannot_answer must be a non-empty string", "", ""},
		{"missing sources", `{"record_id":"SYN-0042","fields":{"S":"A"}}`, `missing key "sources"`, "", ""},
		{"record id a number", `{"record_id":42,"fields":{"S":"A"},"sources":["u"]}`, "record_id must be a non-empty string", "", ""},
		{"fields an array", `{"record_id":"SYN-0042","fields":[["S","A"]],"sources":["u"]}`, "fields must be an object of label to string value", "", ""},
		{"field value a number", `{"record_id":"SYN-0042","fields":{"Updated":2024},"sources":["u"]}`, `field "Updated" must be a string`, "", ""},
		{"field value null", `{"record_id":"SYN-0042","fields":{"Status":null},"sources":["u"]}`, `field "Status" must be a string`, "", ""},
		{"no fields", `{"record_id":"SYN-0042","fields":{},"sources":["u"]}`, "fields must name at least one field", "", ""},
		{"sources a string", `{"record_id":"SYN-0042","fields":{"S":"A"},"sources":"u"}`, "sources must be an array of URL strings", "", ""},
		{"no sources", `{"record_id":"SYN-0042","fields":{"S":"A"},"sources":[]}`, "sources must name at least one URL", "", ""},
		{"empty", "", "the message is empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFinal(tt.in)
			switch {
			case tt.wantErr != "":
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("parseFinal(%q):\n\tgot  %v\n\twant %s", tt.in, err, tt.wantErr)
				}
			case err != nil:
				t.Errorf("parseFinal(%q): %v", tt.in, err)
			case tt.wantID != "" && (got.Answer == nil || got.Answer.RecordID != tt.wantID):
				t.Errorf("parseFinal(%q): got %+v", tt.in, got)
			case tt.wantWhy != "" && (got.CannotAnswer == nil || *got.CannotAnswer != tt.wantWhy):
				t.Errorf("parseFinal(%q): got %+v", tt.in, got)
			}
		})
	}
}

func TestCheckAnswer(t *testing.T) {
	const origin = "http://127.0.0.1:8081"
	pol, err := policy.Parse([]byte("version: 1\nsites:\n  - origin: "+origin+"\n    read:\n      - /records/{id}\n      - /sources/b/{id}\n"+testRecord), "test")
	if err != nil {
		t.Fatal(err)
	}
	a, b := origin+"/records/SYN-0042", origin+"/sources/b/SYN-0042"
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := func(url, label, value string) Evidence {
		return Evidence{URL: url, RetrievedAt: at, Label: label, Value: value, RecordID: "SYN-0042"}
	}
	evidence := []Evidence{
		ev(a, "Record ID", "SYN-0042"), ev(a, "Status", "Active"), ev(a, "Owner", "T. Petrov"), ev(a, "Region", "Under  Review"),
		ev(b, "Record ID", "SYN-0042"), ev(b, "Status", "Active"), ev(b, "Owner", "Z. Petrov"),
	}
	tests := []struct {
		name       string
		ans        Answer
		wantStatus Status
		wantReason string
	}{
		{"backed", Answer{RecordID: "SYN-0042", Fields: map[string]string{"Status": "Active"}, Sources: []string{a}}, StatusAnswered, ReasonAnswered},
		{"label case and colon, value white space", Answer{RecordID: "syn-0042", Fields: map[string]string{"status:": " Active ", "Region": "Under Review"}, Sources: []string{a}}, StatusAnswered, ReasonAnswered},
		{"source written differently", Answer{RecordID: "SYN-0042", Fields: map[string]string{"Status": "Active"}, Sources: []string{"HTTP://127.0.0.1:8081/records/./SYN-0042#top"}}, StatusAnswered, ReasonAnswered},
		{"value case differs", Answer{RecordID: "SYN-0042", Fields: map[string]string{"Status": "active"}, Sources: []string{a}}, StatusBlocked, `unsupported answer: the value claimed for field "Status" is on no cited source`},
		{"owner conflicts though only one cited", Answer{RecordID: "SYN-0042", Fields: map[string]string{"Owner": "T. Petrov"}, Sources: []string{a}}, StatusUncertain, "sources conflict on Owner"},
		{"value from the uncited source", Answer{RecordID: "SYN-0042", Fields: map[string]string{"Owner": "Z. Petrov"}, Sources: []string{a}}, StatusBlocked, `unsupported answer: the value claimed for field "Owner" is on no cited source`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := checkAnswer(pol, "SYN-0042", tt.ans, evidence)
			if v.status != tt.wantStatus || v.reason != tt.wantReason {
				t.Errorf("checkAnswer:\n\tgot  %s: %s\n\twant %s: %s", v.status, v.reason, tt.wantStatus, tt.wantReason)
			}
			if (v.answer != nil) != (tt.wantStatus == StatusAnswered) {
				t.Errorf("answer: %+v", v.answer)
			}
		})
	}
	v := checkAnswer(pol, "SYN-0042", Answer{RecordID: "SYN-0042", Fields: map[string]string{"Owner": "T. Petrov", "Status": "Active"}, Sources: []string{a, b}}, evidence)
	want := []Conflict{{Label: "Owner", Values: []SourcedValue{{"T. Petrov", a}, {"Z. Petrov", b}}}}
	if g, _ := json.Marshal(v.conflicts); string(g) != mustJSON(want) {
		t.Errorf("conflicts:\n\tgot  %s\n\twant %s", g, mustJSON(want))
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestParseObject(t *testing.T) {
	big := `{"url":"` + strings.Repeat("a", maxArgsBytes) + `"}`
	for _, tt := range []struct{ in, want string }{
		{``, ""},
		{`  {}  `, ""},
		{`null`, "arguments must be a JSON object"},
		{`"x"`, "arguments must be a JSON object"},
		{`{"url":"a"`, "arguments are not valid JSON"},
		{big, "arguments longer than 8192 bytes"},
		{"{\"url\":\"\xff\"}", "arguments are not valid UTF-8"},
	} {
		_, err := parseObject(json.RawMessage(tt.in), "url")
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("parseObject(%.40q):\n\tgot  %q\n\twant %q", tt.in, got, tt.want)
		}
	}
}
