package mcpserver

import (
	"crypto/subtle"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions guard the Streamable HTTP transport.
type HTTPOptions struct {
	// Token, when not "", must be given as "Authorization: Bearer TOKEN" on every request.
	Token string
	// Origins are the only Origin header values accepted. A request without an Origin header
	// (not sent by a web page) is accepted; one from any other origin is refused, so that a page
	// in the user's browser cannot drive the server.
	Origins []string
}

// HTTPHandler serves the Streamable HTTP transport. Each MCP session (Mcp-Session-Id) gets its
// own browser; a session idle for the idle timeout is closed with its browser.
func (s *Server) HTTPHandler(o HTTPOptions) http.Handler {
	return HTTPHandler(s.mcp, s.cfg.IdleTimeout, o)
}

// HTTPHandler serves srv over the Streamable HTTP transport behind o's checks (origin, bearer
// token); a session idle for idle is closed. browser-agent guard serves its server through it too.
func HTTPHandler(srv *mcp.Server, idle time.Duration, o HTTPOptions) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		SessionTimeout:      idle,
		MaxRequestBodyBytes: 1 << 20,
	})
	token := []byte(o.Token)
	origins := slices.Clone(o.Origins)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !slices.Contains(origins, origin) {
			http.Error(w, "Forbidden: origin not allowed", http.StatusForbidden)
			return
		}
		if len(token) > 0 {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), token) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="browser-agent"`)
				http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// IsLoopback reports whether a listen address's host is a loopback address or "localhost". An
// empty host is not: it listens on every interface.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// LocalOrigins are the origins a page served by this listener itself would have: the ones a
// local web client may send.
func LocalOrigins(addr net.Addr) []string {
	_, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return nil
	}
	return []string{"http://127.0.0.1:" + port, "http://localhost:" + port, "http://[::1]:" + port}
}
