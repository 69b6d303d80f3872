package policy

import (
	"slices"
	"testing"
	"time"
)

const guardBase = "version: 1\nsites:\n  - origin: http://127.0.0.1:8081\n    read: [/]\n"

// TestGuardKey reads the "guard" key: absent is read-only with the defaults; each value as
// written.
func TestGuardKey(t *testing.T) {
	for _, tt := range []struct {
		name, add string
		want      Guard
	}{
		{"absent: read-only", "", Guard{Mode: GuardRead, ApprovalListen: "127.0.0.1:0", ApprovalTimeout: 2 * time.Minute}},
		{"mode read", "guard:\n  mode: read\n", Guard{Mode: GuardRead, ApprovalListen: "127.0.0.1:0", ApprovalTimeout: 2 * time.Minute}},
		{"empty key: read-only", "guard: {}\n", Guard{Mode: GuardRead, ApprovalListen: "127.0.0.1:0", ApprovalTimeout: 2 * time.Minute}},
		{"write with everything", "guard:\n  mode: write\n  approval:\n    listen: 127.0.0.1:8790\n    timeout: 90s\n  payment_origins: [https://pay.example, \"https://Checkout.Example:8443\"]\n",
			Guard{Mode: GuardWrite, ApprovalListen: "127.0.0.1:8790", ApprovalTimeout: 90 * time.Second, PaymentOrigins: []string{"https://pay.example", "https://checkout.example:8443"}}},
		{"ipv6 loopback", "guard:\n  mode: write\n  approval:\n    listen: \"[::1]:0\"\n", Guard{Mode: GuardWrite, ApprovalListen: "[::1]:0", ApprovalTimeout: 2 * time.Minute}},
		{"localhost", "guard:\n  approval:\n    listen: localhost:9000\n", Guard{Mode: GuardRead, ApprovalListen: "localhost:9000", ApprovalTimeout: 2 * time.Minute}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte(guardBase+tt.add), "p")
			if err != nil {
				t.Fatal(err)
			}
			got := p.Guard()
			if got.Mode != tt.want.Mode || got.ApprovalListen != tt.want.ApprovalListen || got.ApprovalTimeout != tt.want.ApprovalTimeout || !slices.Equal(got.PaymentOrigins, tt.want.PaymentOrigins) {
				t.Errorf("Guard():\n\tgot  %+v\n\twant %+v", got, tt.want)
			}
		})
	}
}

// TestGuardKeyRejects: a bad value of the guard key is refused with its line, its key and what
// is wrong with it.
func TestGuardKeyRejects(t *testing.T) {
	for _, tt := range []struct {
		name, add, want string
	}{
		{"mode maybe", "guard:\n  mode: maybe\n", `p:6: guard.mode: "maybe" is not one of read, write`},
		{"mode empty", "guard:\n  mode: \"\"\n", `p:6: guard.mode: "" is not one of read, write`},
		{"mode a list", "guard:\n  mode: [write]\n", `p:6: expected a string`},
		{"timeout -1", "guard:\n  approval:\n    timeout: -1\n", `p:7: guard.approval.timeout: "-1" is not a duration (e.g. 2m, 90s)`},
		{"timeout negative", "guard:\n  approval:\n    timeout: -2m\n", `p:7: guard.approval.timeout: -2m is out of range 10s..30m0s`},
		{"timeout too long", "guard:\n  approval:\n    timeout: 2h\n", `p:7: guard.approval.timeout: 2h is out of range 10s..30m0s`},
		{"listen on every address", "guard:\n  approval:\n    listen: 0.0.0.0:8790\n", `p:7: guard.approval.listen: "0.0.0.0:8790" is not a loopback address: the approval page takes a person's yes for a write, so only this machine may reach it (use 127.0.0.1 or [::1])`},
		{"listen on all v6", "guard:\n  approval:\n    listen: \"[::]:0\"\n", `p:7: guard.approval.listen: "[::]:0" is not a loopback address: the approval page takes a person's yes for a write, so only this machine may reach it (use 127.0.0.1 or [::1])`},
		{"listen on a LAN address", "guard:\n  approval:\n    listen: 192.168.1.5:0\n", `p:7: guard.approval.listen: "192.168.1.5:0" is not a loopback address: the approval page takes a person's yes for a write, so only this machine may reach it (use 127.0.0.1 or [::1])`},
		{"listen on a host name", "guard:\n  approval:\n    listen: example.com:0\n", `p:7: guard.approval.listen: "example.com:0" is not a loopback address: the approval page takes a person's yes for a write, so only this machine may reach it (use 127.0.0.1 or [::1])`},
		{"listen with no port", "guard:\n  approval:\n    listen: 127.0.0.1\n", `p:7: guard.approval.listen: "127.0.0.1" is not host:port (e.g. 127.0.0.1:0)`},
		{"listen on a bad port", "guard:\n  approval:\n    listen: 127.0.0.1:http\n", `p:7: guard.approval.listen: "127.0.0.1:http": port "http" is not a number 0..65535`},
		{"payment origin a host", "guard:\n  payment_origins: [pay.example]\n", `p:6: guard.payment_origins[0]: "pay.example" is not an origin: write scheme://host[:port], e.g. https://pay.example`},
		{"payment origin not http", "guard:\n  payment_origins: [\"ftp://pay.example\"]\n", `p:6: guard.payment_origins[0]: origin "ftp://pay.example": scheme must be http or https`},
		{"payment origin with a path", "guard:\n  payment_origins: [https://pay.example/checkout]\n", `p:6: guard.payment_origins[0]: origin "https://pay.example/checkout" must be scheme://host[:port] with no path, query or fragment`},
		{"payment origin repeated", "guard:\n  payment_origins: [https://pay.example, https://PAY.example]\n", `p:6: guard.payment_origins[1]: origin https://pay.example is repeated from payment_origins[0]`},
		{"unknown key", "guard:\n  mode: write\n  approve: yes\n", `p:7: approve: unknown key`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(guardBase+tt.add), "p")
			if err == nil || err.Error() != tt.want {
				t.Errorf("Parse:\n\tgot  %v\n\twant %s", err, tt.want)
			}
		})
	}
}
