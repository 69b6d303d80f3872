package adversarial

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// externalCase is the file format of ADVERSARIAL_CASES_DIR: hostile pages as static HTML and
// headers, script steps and expectations (see README.md).
type externalCase struct {
	Name    string            `json:"name"`
	Family  string            `json:"family"`
	Pages   map[string]page   `json:"pages"`
	Task    string            `json:"task"`
	Steps   []json.RawMessage `json:"steps"`
	Want    []string          `json:"want"`
	Secrets []string          `json:"secrets"`
	Markers []string          `json:"markers"`
	NoReach bool              `json:"no_reach"`
	Clicks  []string          `json:"clicks"`
	WaitMS  int               `json:"wait_ms"`
}

// loadExternal reads every *.json file in dir (none when dir is ""): one case object or an array.
func loadExternal(dir string) ([]*tcase, error) {
	if dir == "" {
		return nil, nil
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no *.json case files", dir)
	}
	sort.Strings(files)
	var out []*tcase
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var list []externalCase
		data = bytes.TrimSpace(data)
		if len(data) > 0 && data[0] == '[' {
			err = strictJSON(data, &list)
		} else {
			var one externalCase
			err = strictJSON(data, &one)
			list = []externalCase{one}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for i, ec := range list {
			if ec.Name == "" || len(ec.Steps) == 0 {
				return nil, fmt.Errorf("%s: case %d: name and steps are required", f, i)
			}
			fam := ec.Family
			if fam == "" {
				fam = "external"
			}
			c := &tcase{Name: ec.Name, Family: "ext-" + strings.TrimPrefix(fam, "ext-"), Pages: ec.Pages, Task: ec.Task,
				Want: ec.Want, Secrets: ec.Secrets, Markers: ec.Markers, NoReach: ec.NoReach, Clicks: ec.Clicks,
				Wait: time.Duration(ec.WaitMS) * time.Millisecond, External: f}
			for _, s := range ec.Steps {
				c.Steps = append(c.Steps, string(s))
			}
			if len(c.Want) == 0 {
				c.Want = stBlocked
			}
			out = append(out, c)
		}
	}
	return out, nil
}

func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
