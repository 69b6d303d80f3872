package proxy

import "net/netip"

// Class is what kind of address an IP is, for deciding whether the proxy may dial it. The zero value
// is ClassInvalid, which is never dialed.
type Class int

const (
	ClassInvalid        Class = iota // not an address
	ClassPublic                      // globally routable unicast
	ClassUnspecified                 // 0.0.0.0, ::
	ClassLoopback                    // 127.0.0.0/8, ::1
	ClassPrivate                     // RFC 1918: 10/8, 172.16/12, 192.168/16
	ClassLinkLocal                   // 169.254/16 (cloud metadata lives here), fe80::/10
	ClassCGNAT                       // 100.64/10, RFC 6598 shared address space
	ClassUniqueLocal                 // fc00::/7
	ClassMulticast                   // 224/4, ff00::/8
	ClassBroadcast                   // 255.255.255.255
	ClassDocumentation               // 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20
	ClassReserved                    // 0/8, 192.0.0/24, 192.88.99/24, 198.18/15, 240/4, 100::/64, 2001::/23, fec0::/10, outside 2000::/3
	ClassIPv4Mapped                  // ::ffff:0:0/96
	ClassIPv4Compatible              // ::/96 (deprecated)
	Class6to4                        // 2002::/16
	ClassTeredo                      // 2001::/32
	ClassNAT64                       // 64:ff9b::/96, 64:ff9b:1::/48
)

var classNames = [...]string{
	ClassInvalid:        "invalid",
	ClassPublic:         "public",
	ClassUnspecified:    "unspecified",
	ClassLoopback:       "loopback",
	ClassPrivate:        "private",
	ClassLinkLocal:      "link-local",
	ClassCGNAT:          "cgnat",
	ClassUniqueLocal:    "unique-local",
	ClassMulticast:      "multicast",
	ClassBroadcast:      "broadcast",
	ClassDocumentation:  "documentation",
	ClassReserved:       "reserved",
	ClassIPv4Mapped:     "ipv4-mapped",
	ClassIPv4Compatible: "ipv4-compatible",
	Class6to4:           "6to4",
	ClassTeredo:         "teredo",
	ClassNAT64:          "nat64",
}

func (c Class) String() string {
	if c < 0 || int(c) >= len(classNames) {
		return "invalid"
	}
	return classNames[c]
}

// Public reports whether c is globally routable unicast, the only class the proxy dials without the
// policy naming the address.
func (c Class) Public() bool { return c == ClassPublic }

// dialableLiteral reports whether an address of class c may be dialed when the policy names it as
// a literal origin (e.g. http://127.0.0.1:8081). Addresses that are never a single host are not.
func (c Class) dialableLiteral() bool {
	switch c {
	case ClassInvalid, ClassUnspecified, ClassMulticast, ClassBroadcast:
		return false
	}
	return true
}

// privateName reports whether a name that resolves to an address of class c may be dialed under
// WithAllowPrivateNames(true). Link-local (cloud metadata), reserved and embedded-IPv4 addresses
// never are.
func (c Class) privateName() bool {
	switch c {
	case ClassLoopback, ClassPrivate, ClassUniqueLocal, ClassCGNAT:
		return true
	}
	return false
}

type classRange struct {
	prefix netip.Prefix
	class  Class
}

// The ranges are checked in order; the first that contains the address decides, so narrower
// ranges come before the wider ones they sit in.
var (
	ranges4 = []classRange{
		{netip.MustParsePrefix("0.0.0.0/32"), ClassUnspecified},
		{netip.MustParsePrefix("0.0.0.0/8"), ClassReserved}, // "this network"; connects to the local host on Linux
		{netip.MustParsePrefix("10.0.0.0/8"), ClassPrivate},
		{netip.MustParsePrefix("100.64.0.0/10"), ClassCGNAT},
		{netip.MustParsePrefix("127.0.0.0/8"), ClassLoopback},
		{netip.MustParsePrefix("169.254.0.0/16"), ClassLinkLocal},
		{netip.MustParsePrefix("172.16.0.0/12"), ClassPrivate},
		{netip.MustParsePrefix("192.0.0.0/24"), ClassReserved}, // IETF protocol assignments
		{netip.MustParsePrefix("192.0.2.0/24"), ClassDocumentation},
		{netip.MustParsePrefix("192.88.99.0/24"), ClassReserved}, // former 6to4 relay anycast
		{netip.MustParsePrefix("192.168.0.0/16"), ClassPrivate},
		{netip.MustParsePrefix("198.18.0.0/15"), ClassReserved}, // benchmarking
		{netip.MustParsePrefix("198.51.100.0/24"), ClassDocumentation},
		{netip.MustParsePrefix("203.0.113.0/24"), ClassDocumentation},
		{netip.MustParsePrefix("224.0.0.0/4"), ClassMulticast},
		{netip.MustParsePrefix("255.255.255.255/32"), ClassBroadcast},
		{netip.MustParsePrefix("240.0.0.0/4"), ClassReserved},
	}
	ranges6 = []classRange{
		{netip.MustParsePrefix("::/128"), ClassUnspecified},
		{netip.MustParsePrefix("::1/128"), ClassLoopback},
		{netip.MustParsePrefix("::ffff:0:0/96"), ClassIPv4Mapped},
		{netip.MustParsePrefix("::/96"), ClassIPv4Compatible},
		{netip.MustParsePrefix("64:ff9b::/96"), ClassNAT64},
		{netip.MustParsePrefix("64:ff9b:1::/48"), ClassNAT64},
		{netip.MustParsePrefix("100::/64"), ClassReserved}, // discard-only
		{netip.MustParsePrefix("2001::/32"), ClassTeredo},
		{netip.MustParsePrefix("2001:db8::/32"), ClassDocumentation},
		{netip.MustParsePrefix("2001::/23"), ClassReserved}, // IETF protocol assignments
		{netip.MustParsePrefix("2002::/16"), Class6to4},
		{netip.MustParsePrefix("3fff::/20"), ClassDocumentation},
		{netip.MustParsePrefix("fc00::/7"), ClassUniqueLocal},
		{netip.MustParsePrefix("fe80::/10"), ClassLinkLocal},
		{netip.MustParsePrefix("fec0::/10"), ClassReserved}, // deprecated site-local
		{netip.MustParsePrefix("ff00::/8"), ClassMulticast},
	}
	global6 = netip.MustParsePrefix("2000::/3")
)

// Classify returns the class of an address. It is a pure function of the address: nothing is
// resolved or dialed. An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is ClassIPv4Mapped whatever the
// IPv4 address in it, and so are the other IPv6 forms that embed an IPv4 address (6to4, Teredo,
// NAT64, IPv4-compatible): none of them is ever public to the proxy. A zone is ignored.
func Classify(a netip.Addr) Class {
	if !a.IsValid() {
		return ClassInvalid
	}
	a = a.WithZone("")
	if a.Is4() {
		for _, r := range ranges4 {
			if r.prefix.Contains(a) {
				return r.class
			}
		}
		return ClassPublic
	}
	for _, r := range ranges6 {
		if r.prefix.Contains(a) {
			return r.class
		}
	}
	if !global6.Contains(a) {
		return ClassReserved
	}
	return ClassPublic
}
