package coordinator_test

import (
	"testing"

	"github.com/browser-agent/browser-agent/browse"
	"github.com/browser-agent/browser-agent/coordinator"
	"github.com/browser-agent/browser-agent/internal/testkit/browsertest"
)

// TestAboutTheRecord: a source counts for the task's record when the page shows the record's
// identifier (as a field value, in its title or in its main heading) and no other record's
// identifier in its fields, title or heading. Honest pages that name the record without the demo's
// "Record ID" label are answered; a page about another record, or listing two, is refused.
func TestAboutTheRecord(t *testing.T) {
	const origin = "http://127.0.0.1:8081"
	pol := demoPolicy(t, origin)
	page := origin + "/records/SYN-0042"
	status := browse.Field{Label: "Status", Value: "Active"}
	notAbout := "unsupported answer: source " + page + " is not about record SYN-0042"
	tests := []struct {
		name       string
		page       browsertest.Page
		wantStatus coordinator.Status
		wantReason string
	}{
		{"id only in the title", browsertest.Page{Title: "SYN-0042 — Amber Ridge", Fields: []browse.Field{status}},
			coordinator.StatusAnswered, coordinator.ReasonAnswered},
		{"id only in the main heading", browsertest.Page{Title: "Amber Ridge", Heading: "Record syn-0042", Fields: []browse.Field{status}},
			coordinator.StatusAnswered, coordinator.ReasonAnswered},
		{"id labelled differently", browsertest.Page{Title: "Amber Ridge", Fields: []browse.Field{{Label: "Identifier", Value: " SYN-0042 "}, status}},
			coordinator.StatusAnswered, coordinator.ReasonAnswered},
		{"id under the policy's label with more words", browsertest.Page{Fields: []browse.Field{{Label: "Record ID:", Value: "SYN-0042 (current)"}, status}},
			coordinator.StatusAnswered, coordinator.ReasonAnswered},
		{"the demo's own label", browsertest.Page{Fields: []browse.Field{{Label: "Record ID", Value: "SYN-0042"}, status}},
			coordinator.StatusAnswered, coordinator.ReasonAnswered},
		{"another record's page", browsertest.Page{Title: "SYN-0043 — Birch Creek", Heading: "SYN-0043", Fields: []browse.Field{status}},
			coordinator.StatusBlocked, notAbout},
		{"another record in the fields, ours in the title", browsertest.Page{Title: "SYN-0042", Fields: []browse.Field{{Label: "Record ID", Value: "SYN-0043"}, status}},
			coordinator.StatusBlocked, notAbout},
		{"two records listed in the fields", browsertest.Page{Fields: []browse.Field{{Label: "Record ID", Value: "SYN-0042"}, {Label: "Record ID", Value: "SYN-0043"}, status}},
			coordinator.StatusBlocked, notAbout},
		{"another record named in a field's text", browsertest.Page{Title: "SYN-0042", Fields: []browse.Field{status, {Label: "Supersedes", Value: "replaces SYN-0041 from 2019"}}},
			coordinator.StatusBlocked, notAbout},
		{"two records in the heading", browsertest.Page{Heading: "SYN-0042 and SYN-0043 compared", Fields: []browse.Field{status}},
			coordinator.StatusBlocked, notAbout},
		{"id only in the page's text", browsertest.Page{Title: "A record", Text: "This page is about SYN-0042.", Fields: []browse.Field{status}},
			coordinator.StatusBlocked, notAbout},
		{"id inside a longer word", browsertest.Page{Title: "XSYN-0042", Fields: []browse.Field{status}},
			coordinator.StatusBlocked, notAbout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := browsertest.NewPages(map[string]browsertest.Page{page: tt.page})
			model := script(open(page), extract(), answer("SYN-0042", map[string]string{"Status": "Active"}, page))
			res := coordinator.New(pol).Run(t.Context(), coordinator.RunArgs{Task: "Look up SYN-0042", Model: model, Browser: b})
			if res.Status != tt.wantStatus || res.Reason != tt.wantReason {
				t.Errorf("Run:\n\tgot  %s: %s\n\twant %s: %s", res.Status, res.Reason, tt.wantStatus, tt.wantReason)
			}
		})
	}
}
