package coordinator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/browser-agent/browser-agent/browse"
	"github.com/browser-agent/browser-agent/policy"
)

// Limits of a final message.
const (
	maxFinalBytes   = 64 << 10
	maxClaimFields  = 50
	maxClaimSources = 20
)

// final is a parsed final message: an answer or a refusal.
type final struct {
	Answer       *Answer
	CannotAnswer *string
}

// parseFinal strictly parses the model's final message: one JSON object, either
// {"record_id", "fields", "sources"} or {"cannot_answer"}, no other keys, no key twice. One
// surrounding Markdown code fence is tolerated.
func parseFinal(content string) (final, error) {
	s := strings.TrimSpace(content)
	if s == "" {
		return final{}, errors.New("the message is empty")
	}
	if len(s) > maxFinalBytes {
		return final{}, fmt.Errorf("the message is longer than %d bytes", maxFinalBytes)
	}
	s = stripFence(s)
	if !utf8.ValidString(s) {
		return final{}, errors.New("the message is not valid UTF-8")
	}
	obj, err := parseObjectAny(json.RawMessage(s), "record_id", "fields", "sources", "cannot_answer")
	if err != nil {
		if strings.HasPrefix(err.Error(), "arguments") {
			return final{}, errors.New("the message is not one JSON object")
		}
		return final{}, errors.New(strings.Replace(err.Error(), "argument", "key", 1))
	}
	if v, ok := obj["cannot_answer"]; ok {
		if len(obj) != 1 {
			return final{}, errors.New("cannot_answer must be the only key")
		}
		var why string
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &why) != nil || strings.TrimSpace(why) == "" {
			return final{}, errors.New("cannot_answer must be a non-empty string")
		}
		return final{CannotAnswer: &why}, nil
	}
	var a Answer
	for _, k := range []string{"record_id", "fields", "sources"} {
		if _, ok := obj[k]; !ok {
			return final{}, fmt.Errorf("missing key %q", k)
		}
	}
	if err := json.Unmarshal(obj["record_id"], &a.RecordID); err != nil || obj["record_id"][0] != '"' || strings.TrimSpace(a.RecordID) == "" {
		return final{}, errors.New("record_id must be a non-empty string")
	}
	fields, err := stringMap(obj["fields"])
	if err != nil {
		return final{}, err
	}
	if len(fields) == 0 {
		return final{}, errors.New("fields must name at least one field")
	}
	if len(fields) > maxClaimFields {
		return final{}, fmt.Errorf("fields has more than %d entries", maxClaimFields)
	}
	a.Fields = fields
	if err := json.Unmarshal(obj["sources"], &a.Sources); err != nil || obj["sources"][0] != '[' {
		return final{}, errors.New("sources must be an array of URL strings")
	}
	if len(a.Sources) == 0 {
		return final{}, errors.New("sources must name at least one URL")
	}
	if len(a.Sources) > maxClaimSources {
		return final{}, fmt.Errorf("sources has more than %d entries", maxClaimSources)
	}
	return final{Answer: &a}, nil
}

// stripFence removes one ```json ... ``` fence around s.
func stripFence(s string) string {
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	inner := s[3 : len(s)-3]
	if i := strings.IndexByte(inner, '\n'); i >= 0 && !strings.Contains(inner[:i], "{") {
		inner = inner[i+1:]
	}
	return strings.TrimSpace(inner)
}

// stringMap parses a JSON object whose values are all strings, refusing a key given twice.
func stringMap(raw json.RawMessage) (map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("fields must be an object of label to string value")
	}
	out := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, errors.New("fields is not valid JSON")
		}
		label := tok.(string)
		if _, dup := out[label]; dup {
			return nil, fmt.Errorf("field %q given twice", policy.Clip(label, 64))
		}
		if strings.TrimSpace(label) == "" {
			return nil, errors.New("fields has an empty label")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, errors.New("fields is not valid JSON")
		}
		var s string
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
			return nil, fmt.Errorf("field %q must be a string", policy.Clip(label, 64))
		}
		out[label] = s
	}
	if _, err := dec.Token(); err != nil {
		return nil, errors.New("fields is not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("fields is not valid JSON")
	}
	return out, nil
}

// correction is what the model is told, once, after a malformed final message.
func correction(err error, example string) string {
	return "Your last message was not a valid final answer: " + err.Error() + ". " +
		"Call a tool, or reply with only one JSON object: " +
		`{"record_id": "` + example + `", "fields": {"Label": "value"}, "sources": ["url"]} or {"cannot_answer": "why"}.`
}

// normLabel makes labels comparable: surrounding white space and a trailing colon dropped, inner
// white space collapsed, case folded.
func normLabel(s string) string {
	s = strings.TrimSuffix(strings.TrimSpace(s), ":")
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// normValue makes values comparable: surrounding white space trimmed and inner runs of white space
// collapsed to one space. Case matters.
func normValue(s string) string { return strings.Join(strings.Fields(s), " ") }

// verdict is the check of an answer against the evidence.
type verdict struct {
	status    Status
	reason    string
	answer    *Answer
	conflicts []Conflict
}

// ReasonAnswered is the reason of an answered run.
const ReasonAnswered = "every claimed value matches evidence extracted from a cited source"

// reasonConflict begins the answer check's reason when the sources disagree (uncertain).
const reasonConflict = "sources conflict on "

func unsupported(format string, args ...any) verdict {
	return verdict{status: StatusBlocked, reason: "unsupported answer: " + fmt.Sprintf(format, args...)}
}

// aboutRecord is the record a page is about, decided from what the page shows: its fields (visible
// labelled values, as extract_fields returns them), its title and its main heading (the first
// visible h1). The page is about record R when
//
//   - R is shown: it is the whole value of a field, or the one identifier in the value of a field
//     under one of the policy's record labels, or it appears in the title or the main heading; and
//   - no other record's identifier (by the policy's pattern) appears anywhere in the fields (their
//     labels or values), the title or the main heading.
//
// Otherwise, and under a policy that declares no record, the page is about no record: "". A page
// that lists two records, or names one in its heading and another in a field, is about neither.
func aboutRecord(rec *policy.Record, title, heading string, fields []browse.Field) string {
	if rec == nil {
		return ""
	}
	shown := map[string]bool{}
	all := map[string]bool{}
	for _, id := range rec.IDs(title + "\n" + heading) {
		shown[id], all[id] = true, true
	}
	for _, f := range fields {
		ids := rec.IDs(f.Label + "\n" + f.Value)
		for _, id := range ids {
			all[id] = true
		}
		if id, ok := rec.Canonical(normValue(f.Value)); ok {
			shown[id] = true
		}
		if vs := rec.IDs(f.Value); len(vs) == 1 && slices.ContainsFunc(rec.Labels, func(l string) bool { return normLabel(l) == normLabel(f.Label) }) {
			shown[vs[0]] = true
		}
	}
	if len(all) != 1 {
		return ""
	}
	for id := range all {
		if shown[id] {
			return id
		}
	}
	return ""
}

// checkAnswer checks a claimed answer against the evidence of this run. It is answered only when
// the record is the task's, every source is an allowed URL this run extracted fields from about
// that record, and every claimed value equals a field with the same label on a cited source about
// that record. Any claimed label on which the evidence about the record disagrees, on cited or only
// visited pages, makes it uncertain.
func checkAnswer(pol *policy.Policy, recordID string, a Answer, evidence []Evidence) verdict {
	if got, _ := pol.Record().Canonical(a.RecordID); got == "" || got != recordID {
		return unsupported("record_id %q is not the task's record %s", policy.Clip(a.RecordID, 40), recordID)
	}
	cited := map[string]bool{}
	var sources []string
	for _, s := range a.Sources {
		d, err := pol.Decide(policy.DecideArgs{Method: "GET", URL: s})
		if err != nil || !d.Allowed() {
			return unsupported("source %q is not an allowed URL (%s)", policy.Clip(s, 200), orNoRule(d.Reason))
		}
		var extracted, about bool
		for _, e := range evidence {
			if e.URL == d.URL {
				extracted = true
				about = about || e.RecordID == recordID
			}
		}
		switch {
		case !extracted:
			return unsupported("no fields were extracted from source %s in this run", d.URL)
		case !about:
			return unsupported("source %s is not about record %s", d.URL, recordID)
		}
		if !cited[d.URL] {
			cited[d.URL] = true
			sources = append(sources, d.URL)
		}
	}
	labels := make([]string, 0, len(a.Fields))
	for l := range a.Fields {
		labels = append(labels, l)
	}
	slices.Sort(labels)
	for _, l := range labels {
		want := normValue(a.Fields[l])
		var onSource, matches bool
		for _, e := range evidence {
			if !cited[e.URL] || e.RecordID != recordID || normLabel(e.Label) != normLabel(l) {
				continue
			}
			onSource = true
			if normValue(e.Value) == want {
				matches = true
				break
			}
		}
		switch {
		case !onSource:
			return unsupported("field %q is on no cited source about %s", policy.Clip(l, 64), recordID)
		case !matches:
			return unsupported("the value claimed for field %q is on no cited source", policy.Clip(l, 64))
		}
	}
	var conflicts []Conflict
	var names []string
	for _, l := range labels {
		var vals []SourcedValue
		distinct := map[string]bool{}
		for _, e := range evidence {
			if e.RecordID != recordID || normLabel(e.Label) != normLabel(l) {
				continue
			}
			v := SourcedValue{Value: normValue(e.Value), URL: e.URL}
			if !slices.Contains(vals, v) {
				vals = append(vals, v)
			}
			distinct[v.Value] = true
		}
		if len(distinct) > 1 {
			conflicts = append(conflicts, Conflict{Label: l, Values: vals})
			names = append(names, policy.Clip(l, 64))
		}
	}
	if len(conflicts) > 0 {
		return verdict{status: StatusUncertain, reason: reasonConflict + strings.Join(names, ", "), conflicts: conflicts}
	}
	fields := make(map[string]string, len(a.Fields))
	for l, v := range a.Fields {
		fields[l] = normValue(v)
	}
	return verdict{status: StatusAnswered, reason: ReasonAnswered, answer: &Answer{RecordID: recordID, Fields: fields, Sources: sources}}
}
