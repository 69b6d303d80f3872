package proxy

import (
	"net/netip"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		addr string
		want Class
	}{
		// IPv4
		{"0.0.0.0", ClassUnspecified},
		{"0.1.2.3", ClassReserved}, // this network
		{"10.0.0.0", ClassPrivate},
		{"10.255.255.255", ClassPrivate},
		{"11.0.0.1", ClassPublic},
		{"100.63.255.255", ClassPublic},
		{"100.64.0.0", ClassCGNAT},
		{"100.127.255.255", ClassCGNAT},
		{"100.128.0.0", ClassPublic},
		{"127.0.0.1", ClassLoopback},
		{"127.255.255.254", ClassLoopback},
		{"169.254.169.254", ClassLinkLocal}, // cloud metadata
		{"172.15.255.255", ClassPublic},
		{"172.16.0.1", ClassPrivate},
		{"172.31.255.255", ClassPrivate},
		{"172.32.0.0", ClassPublic},
		{"192.0.0.8", ClassReserved},
		{"192.0.2.1", ClassDocumentation},
		{"192.88.99.1", ClassReserved},
		{"192.168.0.1", ClassPrivate},
		{"192.169.0.1", ClassPublic},
		{"198.18.0.1", ClassReserved},
		{"198.19.255.255", ClassReserved},
		{"198.51.100.7", ClassDocumentation},
		{"203.0.113.9", ClassDocumentation},
		{"224.0.0.1", ClassMulticast},
		{"239.255.255.255", ClassMulticast},
		{"240.0.0.1", ClassReserved},
		{"255.255.255.255", ClassBroadcast},
		{"8.8.8.8", ClassPublic},
		{"93.184.215.14", ClassPublic},
		// IPv6
		{"::", ClassUnspecified},
		{"::1", ClassLoopback},
		{"::ffff:127.0.0.1", ClassIPv4Mapped},
		{"::ffff:8.8.8.8", ClassIPv4Mapped}, // even a public IPv4 inside
		{"::127.0.0.1", ClassIPv4Compatible},
		{"64:ff9b::7f00:1", ClassNAT64},
		{"64:ff9b:1::a00:1", ClassNAT64},
		{"100::1", ClassReserved},
		{"2001::1", ClassTeredo},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", ClassTeredo},
		{"2001:db8::1", ClassDocumentation},
		{"2001:10::1", ClassReserved}, // inside 2001::/23
		{"2002:7f00:1::1", Class6to4},
		{"2002:c0a8:101::1", Class6to4},
		{"3fff::1", ClassDocumentation},
		{"fc00::1", ClassUniqueLocal},
		{"fd12:3456::1", ClassUniqueLocal},
		{"fe80::1", ClassLinkLocal},
		{"fe80::1%eth0", ClassLinkLocal},
		{"fec0::1", ClassReserved},
		{"ff02::1", ClassMulticast},
		{"4000::1", ClassReserved}, // outside 2000::/3
		{"2606:4700:4700::1111", ClassPublic},
		{"2a00:1450:4001::1", ClassPublic},
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		if got := Classify(a); got != tt.want {
			t.Errorf("Classify(%s)\n\tgot  %v\n\twant %v", tt.addr, got, tt.want)
		}
		if got, want := Classify(a).Public(), tt.want == ClassPublic; got != want {
			t.Errorf("Classify(%s).Public()\n\tgot  %t\n\twant %t", tt.addr, got, want)
		}
	}
	if got := Classify(netip.Addr{}); got != ClassInvalid {
		t.Errorf("Classify(zero Addr)\n\tgot  %v\n\twant %v", got, ClassInvalid)
	}
	var zero Class
	if zero.Public() || zero.dialableLiteral() || zero.privateName() {
		t.Errorf("the zero Class must never be dialed")
	}
}

func TestClassPermissions(t *testing.T) {
	tests := []struct {
		c                      Class
		wantLiteral, wantNamed bool
	}{
		{ClassInvalid, false, false},
		{ClassUnspecified, false, false},
		{ClassMulticast, false, false},
		{ClassBroadcast, false, false},
		{ClassLoopback, true, true},
		{ClassPrivate, true, true},
		{ClassUniqueLocal, true, true},
		{ClassCGNAT, true, true},
		{ClassLinkLocal, true, false},
		{ClassReserved, true, false},
		{ClassDocumentation, true, false},
		{ClassIPv4Mapped, true, false},
		{ClassIPv4Compatible, true, false},
		{Class6to4, true, false},
		{ClassTeredo, true, false},
		{ClassNAT64, true, false},
	}
	for _, tt := range tests {
		if got := tt.c.dialableLiteral(); got != tt.wantLiteral {
			t.Errorf("%v.dialableLiteral()\n\tgot  %t\n\twant %t", tt.c, got, tt.wantLiteral)
		}
		if got := tt.c.privateName(); got != tt.wantNamed {
			t.Errorf("%v.privateName()\n\tgot  %t\n\twant %t", tt.c, got, tt.wantNamed)
		}
	}
	for c := ClassInvalid; c <= ClassNAT64; c++ {
		if c.String() == "" || c != ClassInvalid && c.String() == "invalid" {
			t.Errorf("Class(%d) has no name", int(c))
		}
	}
}
