package proxy

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/url"
)

// Client returns an HTTP client that sends every request through this proxy with the run's
// credential and never follows a redirect (a 3xx is returned as it is, for the bridge to decide).
// The bridge's own document fetches use it, so that one policy sees all traffic.
//
// A request the proxy refuses fails with an error wrapping *DeniedError, which carries the
// reason; any response from an upstream, error statuses included, is returned as it is. Client
// panics for a proxy made by New, which does not listen.
func (p *Proxy) Client() *http.Client {
	if p.ln == nil {
		panic("proxy: Client needs a proxy made by Start")
	}
	p.clientOnce.Do(func() {
		proxyURL := &url.URL{Scheme: "http", Host: p.Addr(), User: url.UserPassword(p.auth.user, p.auth.pass)}
		p.clientTr = &clientTransport{tr: &http.Transport{
			Proxy:               http.ProxyURL(proxyURL),
			ForceAttemptHTTP2:   false,
			TLSClientConfig:     &tls.Config{RootCAs: p.RootCAs(), MinVersion: tls.VersionTLS12},
			MaxIdleConnsPerHost: 8,
			IdleConnTimeout:     p.cfg.timeouts.Idle,
			OnProxyConnectResponse: func(_ context.Context, _ *url.URL, req *http.Request, resp *http.Response) error {
				if resp.StatusCode == http.StatusOK {
					return nil
				}
				return &DeniedError{
					Method: http.MethodConnect,
					URL:    "https://" + req.Host,
					Status: resp.StatusCode,
					Reason: resp.Header.Get(HeaderError),
				}
			},
		}}
	})
	return &http.Client{
		Transport:     p.clientTr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// clientTransport turns the proxy's own refusals into *DeniedError.
type clientTransport struct {
	tr *http.Transport
}

func (t *clientTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.tr.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	reason := resp.Header.Get(HeaderError)
	switch resp.StatusCode {
	case http.StatusForbidden, http.StatusProxyAuthRequired, http.StatusServiceUnavailable:
	default:
		return resp, nil
	}
	if reason == "" {
		return resp, nil
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	u := *req.URL
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return nil, &DeniedError{Method: req.Method, URL: u.String(), Status: resp.StatusCode, Reason: reason}
}

func (t *clientTransport) CloseIdleConnections() { t.tr.CloseIdleConnections() }
