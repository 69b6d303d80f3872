package policy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// corpusSite is one "site" block of a corpus file: a policy and the paths decided under it.
type corpusSite struct {
	line   int
	policy *Policy
	origin string
	paths  []string
}

// loadCorpus reads a corpus file of testdata/corpus (see the comments at the top of reads.txt).
func loadCorpus(t *testing.T, name string) []corpusSite {
	t.Helper()
	f, err := os.Open("testdata/corpus/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusSite
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "site "):
			fields := strings.Fields(line)[1:]
			var read []string
			search := ""
			for _, r := range fields[1:] {
				if s, ok := strings.CutPrefix(r, "search:"); ok {
					search = s
					continue
				}
				read = append(read, r)
			}
			rj, _ := json.Marshal(read)
			y := fmt.Sprintf("version: 1\nsites:\n  - origin: %s\n    read: %s\n", fields[0], rj)
			if search != "" {
				sj, _ := json.Marshal(search)
				y += "    search: " + string(sj) + "\n"
			}
			p, err := Parse([]byte(y), fmt.Sprintf("%s:%d", name, n))
			if err != nil {
				t.Fatalf("%s:%d: %v", name, n, err)
			}
			out = append(out, corpusSite{line: n, policy: p, origin: fields[0]})
		case len(out) == 0:
			t.Fatalf("%s:%d: a path before the first site line", name, n)
		default:
			out[len(out)-1].paths = append(out[len(out)-1].paths, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRealisticCorpora decides the two corpora of testdata/corpus: ordinary reads of real site
// shapes, each under the policy a user would write (at least 99 % must be allowed), and GET-writes
// of real software under policies broad enough to match them (every one must be denied, as a
// write). It prints both rates and every read it denies.
func TestRealisticCorpora(t *testing.T) {
	var reads, allowed int
	for _, s := range loadCorpus(t, "reads.txt") {
		for _, path := range s.paths {
			reads++
			d, _ := s.policy.Decide(DecideArgs{URL: s.origin + path})
			if d.Allowed() {
				allowed++
				continue
			}
			t.Logf("read denied: %s%s: %s (%s)", s.origin, path, d.Reason, d.Rule)
		}
	}
	var writes, denied int
	for _, s := range loadCorpus(t, "writes.txt") {
		for _, path := range s.paths {
			writes++
			d, _ := s.policy.Decide(DecideArgs{URL: s.origin + path})
			if !d.Allowed() && d.Reason == ReasonWriteWord {
				denied++
				continue
			}
			t.Errorf("GET-write not denied as a write: %s%s: %v %q (%s)", s.origin, path, d.Verdict, d.Reason, d.Rule)
		}
	}
	readRate := 100 * float64(allowed) / float64(reads)
	writeRate := 100 * float64(denied) / float64(writes)
	t.Logf("realistic reads allowed: %d of %d (%.1f %%); GET-writes denied as writes: %d of %d (%.1f %%)", allowed, reads, readRate, denied, writes, writeRate)
	fmt.Printf("corpus: reads allowed %d/%d (%.1f %%), GET-writes denied %d/%d (%.1f %%)\n", allowed, reads, readRate, denied, writes, writeRate)
	if reads < 300 || writes < 100 {
		t.Errorf("corpora too small: %d reads (want >= 300), %d GET-writes (want >= 100)", reads, writes)
	}
	if readRate < 99 {
		t.Errorf("%.1f %% of realistic reads allowed, want >= 99 %%", readRate)
	}
}
