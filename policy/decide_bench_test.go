package policy

import "testing"

// BenchmarkDecideCanonical is the most common decision: an absolute, canonical read URL, which
// takes the fast path. bench/ has the realistic mix.
func BenchmarkDecideCanonical(b *testing.B) {
	p := loadDemo(b)
	b.ReportAllocs()
	for b.Loop() {
		d, _ := p.Decide(DecideArgs{URL: "http://127.0.0.1:8081/records/SYN-0042"})
		if !d.Allowed() {
			b.Fatal(d.Reason)
		}
	}
}
