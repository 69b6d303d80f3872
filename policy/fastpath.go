package policy

import "strings"

// parseFast parses the common case, an http or https URL already in canonical form, without the
// full WHATWG parser: a lower-case scheme, a lower-case ASCII host (a name whose last label is not
// a number, or a canonical dotted-quad IPv4 address), an optional port with no leading zero, and a
// path and query of characters the parser leaves alone, with no dot segment, backslash, white space
// or control character anywhere. Anything else returns ok == false and takes the full parser.
// FuzzFastPath checks that whenever this accepts an input, the full parser gives the same result.
func parseFast(raw string) (u *URL, ok bool) {
	var scheme, rest string
	switch {
	case strings.HasPrefix(raw, "http://"):
		scheme, rest = "http", raw[len("http://"):]
	case strings.HasPrefix(raw, "https://"):
		scheme, rest = "https", raw[len("https://"):]
	default:
		return nil, false
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return nil, false // white space, controls, non-ASCII and backslashes need the full parser
		}
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if frag := strings.IndexByte(tail, '#'); frag >= 0 {
		tail = tail[:frag]
	}
	host, port, hasPort := strings.Cut(authority, ":")
	if !fastHost(host) {
		return nil, false
	}
	dport := 80
	if scheme == "https" {
		dport = 443
	}
	if hasPort {
		n, ok := fastPort(port)
		if !ok {
			return nil, false
		}
		if n == dport {
			port = "" // the parser drops a default port
		}
		dport = n
	}
	path, query, hasQuery := strings.Cut(tail, "?")
	if path == "" {
		path = "/"
	}
	if !fastPath(path) || hasQuery && !fastQuery(query) {
		return nil, false
	}
	u = &URL{scheme: scheme, host: host, port: port, dport: dport, path: path, query: query}
	var b strings.Builder
	b.Grow(len(raw) + 1)
	b.WriteString(scheme)
	b.WriteString("://")
	b.WriteString(host)
	if port != "" {
		b.WriteByte(':')
		b.WriteString(port)
	}
	b.WriteString(path)
	if hasQuery {
		b.WriteByte('?')
		b.WriteString(query)
	}
	u.href = b.String()
	return u, true
}

// fastHost accepts a lower-case host of letters, digits, hyphens and dots whose labels are not
// empty, not punycode, do not start or end with a hyphen, and whose last label starts with a letter,
// or else a canonical dotted-quad IPv4 address.
func fastHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	if canonicalIPv4(h) {
		return true
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		// A label starting or ending with '-' is left to the full parser: its number parsing
		// reads "-0" as zero (and so the host as 0.0.0.0), which the fast path must not second-guess.
		if l == "" || len(l) > 63 || strings.HasPrefix(l, "xn--") || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	// A last label that starts with a digit may be read as a number (the WHATWG "ends in a number"
	// rule, and the parser's own number parsing beyond it): left to the full parser.
	last := labels[len(labels)-1]
	return last[0] < '0' || last[0] > '9'
}

// canonicalIPv4 reports whether h is four decimal numbers 0..255 without leading zeros.
func canonicalIPv4(h string) bool {
	parts := 0
	for p := range strings.SplitSeq(h, ".") {
		parts++
		if parts > 4 || p == "" || len(p) > 3 || len(p) > 1 && p[0] == '0' {
			return false
		}
		n := 0
		for i := 0; i < len(p); i++ {
			if p[i] < '0' || p[i] > '9' {
				return false
			}
			n = n*10 + int(p[i]-'0')
		}
		if n > 255 {
			return false
		}
	}
	return parts == 4
}

// fastPort accepts 1 to 5 digits without a leading zero, 1..65535.
func fastPort(p string) (int, bool) {
	if p == "" || len(p) > 5 || p[0] == '0' {
		return 0, false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return 0, false
		}
		n = n*10 + int(p[i]-'0')
	}
	return n, n <= 65535
}

// fastPath accepts a path of unreserved and sub-delimiter characters, ':', '@', '/' and valid
// percent escapes, with no empty-named dot segment ("." or "..", plain or percent-encoded).
func fastPath(p string) bool {
	if p[0] != '/' {
		return false
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		if seg == "." || seg == ".." || strings.Contains(strings.ToLower(seg), "%2e") {
			return false
		}
	}
	return fastChars(p, false)
}

// fastQuery accepts the same characters as fastPath and '?', but not "'" (which the parser
// percent-encodes in the query of an http(s) URL).
func fastQuery(q string) bool { return fastChars(q, true) }

func fastChars(s string, query bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~!$&()*+,;=:@/", c) >= 0:
		case c == '?' && query:
		case c == '%':
			if i+2 >= len(s) || !ishex(s[i+1]) || !ishex(s[i+2]) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// resolveFast resolves ref against base without the full WHATWG parser when base is an http or
// https URL in canonical form (as parseFast accepts it) and ref is one of the common shapes: an
// absolute http(s) URL, a scheme-relative "//host/…", a path-absolute "/…", a query "?…", a
// fragment "#…" or nothing, or a path-relative reference whose first segment holds no ':' (which
// could be a scheme). The result is built as an absolute URL and must itself pass parseFast, which
// checks every character; plain "." and ".." segments of a path-relative reference are resolved
// here exactly as the standard's path state does. Anything else returns ok == false and takes the
// full parser. FuzzResolveFast holds it to the full parser's ParseRef.
func resolveFast(ref, base string) (u *URL, ok bool) {
	for i := 0; i < len(ref); i++ {
		if c := ref[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			// The parser strips leading and trailing white space and controls, drops tabs and
			// newlines anywhere and reads '\' as '/': all of them change how the reference splits.
			return nil, false
		}
	}
	// Even an absolute reference needs the base to pass: ParseRef refuses a malformed base.
	b, ok := parseFast(base)
	if !ok {
		return nil, false
	}
	origin := b.Origin()
	switch {
	case strings.HasPrefix(ref, "http://"), strings.HasPrefix(ref, "https://"):
		return parseFast(ref) // both slashes: the same with or without a base
	case strings.HasPrefix(ref, "//"):
		return parseFast(b.scheme + ":" + ref)
	case strings.HasPrefix(ref, "/"):
		return parseFast(origin + ref)
	case ref == "" || ref[0] == '#':
		return b, true // the fragment is not part of the result
	case ref[0] == '?':
		return parseFast(origin + b.path + ref)
	}
	// A path-relative reference. A ':' before the first '/', '?' or '#' may make it a URL with a
	// scheme of its own ("javascript:…", or "http:x", which the standard resolves against an http
	// base): left to the full parser.
	end := strings.IndexAny(ref, "?#")
	if end < 0 {
		end = len(ref)
	}
	refPath, rest := ref[:end], ref[end:]
	if first, _, _ := strings.Cut(refPath, "/"); strings.IndexByte(first, ':') >= 0 {
		return nil, false
	}
	// The standard: the base's path without its last segment, then the reference's segments in
	// the path state: ".." removes the last segment, "." nothing; either of them as the last
	// segment leaves an empty one (a trailing slash).
	segs := strings.Split(b.path[1:], "/")
	segs = segs[:len(segs)-1]
	parts := strings.Split(refPath, "/")
	for i, s := range parts {
		last := i == len(parts)-1
		switch s {
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
			if last {
				segs = append(segs, "")
			}
		case ".":
			if last {
				segs = append(segs, "")
			}
		default:
			segs = append(segs, s)
		}
	}
	if rest != "" && rest[0] == '#' {
		rest = ""
	}
	return parseFast(origin + "/" + strings.Join(segs, "/") + rest)
}
