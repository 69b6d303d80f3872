package policy

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Record is how the policy's site names its records: the pattern of a record identifier, an
// example of one, a phrase that describes the pattern to a person, and the field labels under
// which a page names its record. The policy file declares it under the record key:
//
//	record:
//	  id:
//	    pattern: 'REC-\d{4}'      # RE2 syntax, matched whole; no anchors
//	    example: REC-0042         # must match the pattern
//	    description: REC- followed by four digits   # optional; used in error messages
//	  labels: [Record ID]         # optional
//
// Identifiers are matched without regard to case and written in the case of the example (an
// upper-case example makes every identifier upper case). A task names exactly one identifier. A
// word that begins with the letters the pattern begins with, followed by a separator or a digit
// ("REC-42", "rec 0042"), is taken as an attempt at one and must match.
type Record struct {
	Pattern     string
	Example     string
	Description string
	Labels      []string

	find *regexp.Regexp // the pattern, case-insensitive, unanchored
	full *regexp.Regexp // the pattern, case-insensitive, matching a whole string
	like *regexp.Regexp // an attempt at an identifier; nil when the pattern starts with no letters
}

// Limits of the record key.
const (
	maxIDPatternLen = 200
	maxIDLen        = 64
	maxRecordLabels = 10
)

// compileRecord validates the record key. fail names the file, line and key of an error.
func compileRecord(fr *fileRecord, fail func(int, string, string, ...any) error) (*Record, error) {
	pat, ex := fr.ID.Pattern, fr.ID.Example
	if pat.V == "" {
		return nil, fail(ex.Line, "record.id.pattern", `missing; write the identifier's pattern, e.g. 'REC-\d{4}'`)
	}
	if len(pat.V) > maxIDPatternLen {
		return nil, fail(pat.Line, "record.id.pattern", "pattern is longer than %d bytes", maxIDPatternLen)
	}
	tree, err := syntax.Parse(pat.V, syntax.Perl)
	if err != nil {
		return nil, fail(pat.Line, "record.id.pattern", "pattern %#q does not compile: %v", pat.V, err)
	}
	if anchored(tree) {
		return nil, fail(pat.Line, "record.id.pattern", "pattern %#q must not hold ^, $, \\A, \\z or \\b: it is matched against a whole identifier", pat.V)
	}
	r := &Record{Pattern: pat.V, Example: ex.V, Description: fr.ID.Description.V}
	r.find = regexp.MustCompile(`(?i:` + pat.V + `)`)
	r.full = regexp.MustCompile(`^(?i:` + pat.V + `)$`)
	if r.full.MatchString("") {
		return nil, fail(pat.Line, "record.id.pattern", "pattern %#q matches the empty string", pat.V)
	}
	if ex.V == "" {
		return nil, fail(pat.Line, "record.id.example", "missing; write one identifier the pattern matches, e.g. REC-0042")
	}
	if len(ex.V) > maxIDLen || strings.IndexFunc(ex.V, unicode.IsSpace) >= 0 || !utf8.ValidString(ex.V) {
		return nil, fail(ex.Line, "record.id.example", "example %q must be at most %d bytes with no white space", ex.V, maxIDLen)
	}
	if !r.full.MatchString(ex.V) {
		return nil, fail(ex.Line, "record.id.example", "example %q does not match the pattern %#q", ex.V, pat.V)
	}
	if got := r.IDs(ex.V); len(got) != 1 || !strings.EqualFold(got[0], ex.V) {
		return nil, fail(ex.Line, "record.id.example", "example %q is not found as one identifier in text; the pattern %#q must begin and end with a letter, digit or _ it matches", ex.V, pat.V)
	}
	if d := fr.ID.Description; d.V != strings.TrimSpace(d.V) || strings.ContainsAny(d.V, "\r\n") {
		return nil, fail(d.Line, "record.id.description", "description %q has surrounding white space or a line break", d.V)
	}
	if len(fr.Labels) > maxRecordLabels {
		return nil, fail(fr.Labels[maxRecordLabels].Line, "record.labels", "more than %d labels", maxRecordLabels)
	}
	for i, l := range fr.Labels {
		if strings.TrimSpace(l.V) == "" || l.V != strings.TrimSpace(l.V) || len(l.V) > 200 {
			return nil, fail(l.Line, fmt.Sprintf("record.labels[%d]", i), "label %q is empty, longer than 200 bytes or has surrounding white space", l.V)
		}
		r.Labels = append(r.Labels, l.V)
	}
	if p := leadingLetters(tree); p != "" {
		r.like = regexp.MustCompile(`(?i)\b` + regexp.QuoteMeta(p) + `(?:[-_ ]?\d[A-Za-z0-9_-]*|[-_][A-Za-z0-9_-]*)`)
	}
	return r, nil
}

// anchored reports whether the pattern holds an anchor or a word boundary: the identifier is
// found in text by the program, which places the boundaries itself.
func anchored(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	for _, s := range re.Sub {
		if anchored(s) {
			return true
		}
	}
	return false
}

// leadingLetters is the run of ASCII letters every match of the pattern begins with, as the
// pattern writes them ("REC" for REC-\d{4}); "" when it begins with no fixed letter.
func leadingLetters(re *syntax.Regexp) string {
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return ""
	}
	prefix, _ := prog.Prefix()
	end := 0
	for end < len(prefix) && (prefix[end] >= 'A' && prefix[end] <= 'Z' || prefix[end] >= 'a' && prefix[end] <= 'z') {
		end++
	}
	return prefix[:end]
}

// Canonical is id in the case of the example, when id is one whole identifier; ok is false
// otherwise. Surrounding white space is ignored.
func (r *Record) Canonical(id string) (string, bool) {
	id = strings.TrimSpace(id)
	if r == nil || len(id) > maxIDLen || !r.full.MatchString(id) {
		return "", false
	}
	return r.canon(id), true
}

func (r *Record) canon(id string) string {
	switch r.Example {
	case strings.ToUpper(r.Example):
		return strings.ToUpper(id)
	case strings.ToLower(r.Example):
		return strings.ToLower(id)
	}
	return id
}

// idRune is a rune that continues an identifier's word: a letter, a digit or _.
func idRune(c rune) bool { return c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c) }

// IDs returns the identifiers s shows, in canonical form, each once, in order of appearance. An
// identifier counts only as a whole word: the characters either side of it are not letters,
// digits or _.
func (r *Record) IDs(s string) []string {
	if r == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for pos := 0; pos <= len(s); {
		loc := r.find.FindStringIndex(s[pos:])
		if loc == nil {
			break
		}
		start, end := pos+loc[0], pos+loc[1]
		before, _ := utf8.DecodeLastRuneInString(s[:start])
		after, _ := utf8.DecodeRuneInString(s[end:])
		if end > start && (start == 0 || !idRune(before)) && (end == len(s) || !idRune(after)) {
			if id := r.canon(s[start:end]); !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
			pos = end
			continue
		}
		_, w := utf8.DecodeRuneInString(s[start:])
		pos = start + max(w, 1)
	}
	return out
}

// malformed returns the first word of s that is an attempt at an identifier but not one.
func (r *Record) malformed(s string) string {
	if r.like == nil {
		return ""
	}
	for _, m := range r.like.FindAllString(s, -1) {
		if !r.full.MatchString(m) {
			return m
		}
	}
	return ""
}

// ErrNoRecord is a task given under a policy that declares no record key.
var ErrNoRecord = errors.New("the policy declares no record identifier (record.id.pattern); a task names one record by it")

// Record returns the policy's record key; nil when the file declares none.
func (p *Policy) Record() *Record {
	if p == nil {
		return nil
	}
	return p.record
}

// ParseTask accepts a task that names exactly one record identifier of the policy's pattern. No
// identifier, several, or a malformed one is rejected with a *TaskError that names what was wrong;
// a policy with no record key gives ErrNoRecord.
func (p *Policy) ParseTask(text string) (Task, error) {
	r := p.Record()
	if r == nil {
		return Task{}, ErrNoRecord
	}
	if !utf8.ValidString(text) {
		return Task{}, &TaskError{Reason: "task is not valid UTF-8"}
	}
	t := strings.TrimSpace(text)
	if t == "" {
		return Task{}, &TaskError{Reason: fmt.Sprintf("task is empty; name one record ID, e.g. \"Look up %s\"", r.Example)}
	}
	if utf8.RuneCountInString(t) > MaxTaskLength {
		return Task{}, &TaskError{Reason: fmt.Sprintf("task is longer than %d characters", MaxTaskLength)}
	}
	for _, c := range t {
		if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
			return Task{}, &TaskError{Reason: "task contains control characters"}
		}
	}
	if m := r.malformed(t); m != "" {
		return Task{}, &TaskError{Reason: fmt.Sprintf("malformed record ID %q; record IDs are %s, e.g. %s", m, r.describe(), r.Example)}
	}
	ids := r.IDs(t)
	switch len(ids) {
	case 0:
		return Task{}, &TaskError{Reason: fmt.Sprintf("no record ID; name one, e.g. \"Look up %s\"", r.Example)}
	case 1:
		return Task{Text: t, RecordID: ids[0]}, nil
	default:
		return Task{}, &TaskError{Reason: fmt.Sprintf("more than one record ID (%s); name exactly one", strings.Join(ids, ", "))}
	}
}

// describe is how an error message describes an identifier.
func (r *Record) describe() string {
	if r.Description != "" {
		return r.Description
	}
	return fmt.Sprintf("matched by the pattern %#q", r.Pattern)
}
