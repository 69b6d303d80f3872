package demosite

import (
	"bytes"
	_ "embed"
	"strings"
)

// policyOrigin is the origin policy.yaml is written for.
const policyOrigin = "http://127.0.0.1:8081"

//go:embed policy.yaml
var policyYAML []byte

// PolicyYAML returns the default policy for this site served at origin (for example
// "http://127.0.0.1:8081"): the read routes, the search template, the sign-in route (POST /login,
// allowed only under a person's takeover lease in serve), approved models and limits. Redirect
// chains (/go/*) and write routes are not allowed.
func PolicyYAML(origin string) []byte {
	origin = strings.TrimRight(origin, "/")
	return bytes.ReplaceAll(policyYAML, []byte(policyOrigin), []byte(origin))
}
