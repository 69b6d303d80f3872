package presets_test

import (
	"slices"
	"testing"

	demosite "github.com/browser-agent/browser-agent/demo-site"
	"github.com/browser-agent/browser-agent/demo-site/presets"
)

// TestFieldOrderIsTheSites: FieldOrder is the demo site's record page's fields, in its order.
func TestFieldOrderIsTheSites(t *testing.T) {
	if got := demosite.FieldLabels(); !slices.Equal(presets.FieldOrder, got) {
		t.Errorf("FieldOrder %q, the site's record page lists %q", presets.FieldOrder, got)
	}
}
