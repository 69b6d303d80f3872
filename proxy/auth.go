package proxy

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
)

// credential is the run's random proxy user name and password; every request must carry it as
// Basic Proxy-Authorization.
type credential struct {
	user, pass string
	want       []byte // "user:pass"
}

func newCredential() credential {
	c := credential{user: "ba-" + rand.Text(), pass: rand.Text()}
	c.want = []byte(c.user + ":" + c.pass)
	return c
}

// authorized reports whether r carries the credential, compared in constant time.
func (c credential) authorized(r *http.Request) bool {
	scheme, cred, ok := strings.Cut(r.Header.Get("Proxy-Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return false
	}
	got, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(got, c.want) == 1
}
