package testutil

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// StartLiveRun posts body (a run's JSON, e.g. {"preset":"lookup"}) to the server at base's
// /api/runs and returns the run's ID and event stream path. The test fails unless the server
// accepted it as a live run (202, no recording in its place).
func StartLiveRun(t testing.TB, base, body string) (id, events string) {
	t.Helper()
	res, err := http.Post(base+"/api/runs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var created struct {
		ID       string          `json:"id"`
		Events   string          `json:"events"`
		Recorded json.RawMessage `json:"recorded"`
	}
	json.NewDecoder(res.Body).Decode(&created)
	if res.StatusCode != http.StatusAccepted || created.Recorded != nil {
		t.Fatalf("POST %s: %d, recorded %s", body, res.StatusCode, created.Recorded)
	}
	return created.ID, created.Events
}
