package egress

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"testing"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr   string
		public bool
	}{
		{"93.184.216.34", true},
		{"8.8.8.8", true},
		{"2606:4700:4700::1111", true},
		{"2a00:1450:4001:80b::200e", true},
		{"::ffff:93.184.216.34", true},
		{"64:ff9b::5db8:d822", true}, // NAT64 of 93.184.216.34
		{"2002:5db8:d822::1", true},  // 6to4 of 93.184.216.34
		{"100.63.255.255", true},     // just below CGNAT
		{"100.128.0.0", true},        // just above
		{"172.32.0.1", true},         // just above 172.16/12

		{"127.0.0.1", false},
		{"127.255.255.254", false},
		{"::1", false},
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"::", false},
		{"10.0.0.1", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"192.168.1.1", false},
		{"169.254.169.254", false}, // cloud metadata
		{"fe80::1", false},
		{"fe80::1%eth0", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"100.64.0.1", false},
		{"100.127.255.255", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"ff02::1", false},
		{"ff05::2", false},
		{"255.255.255.255", false},
		{"240.0.0.1", false},
		{"192.0.2.1", false},
		{"198.18.0.1", false},
		{"198.51.100.7", false},
		{"203.0.113.9", false},
		{"192.0.0.8", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.1.2.3", false},
		{"::ffff:169.254.169.254", false},
		{"::127.0.0.1", false},      // IPv4-compatible
		{"64:ff9b::7f00:1", false},  // NAT64 of 127.0.0.1
		{"64:ff9b::a00:1", false},   // NAT64 of 10.0.0.1
		{"2002:7f00:1::1", false},   // 6to4 of 127.0.0.1
		{"2002:c0a8:101::1", false}, // 6to4 of 192.168.1.1
		{"2001:db8::1", false},
		{"2001::1", false}, // Teredo
		{"fec0::1", false},
		{"100::1", false},
	}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		reason, public := Classify(a)
		if public != tt.public {
			t.Errorf("Classify(%s) = (%q, %v), want public=%v", tt.addr, reason, public, tt.public)
		}
		if !public && reason == "" {
			t.Errorf("Classify(%s) gives no reason", tt.addr)
		}
	}
}

func TestNewPolicy(t *testing.T) {
	t.Parallel()
	p, err := NewPolicy([]string{" 127.0.0.1 ", "10.1.0.0/16", "[::1]", "Hooks.Internal.", ""})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"127.0.0.1", "10.1.2.3", "::1", "hooks.internal", "HOOKS.internal."} {
		if !p.allowsHost(h) {
			t.Errorf("allowsHost(%q) = false, want true", h)
		}
	}
	for _, h := range []string{"127.0.0.2", "10.2.0.1", "other.internal", "internal", "localhost"} {
		if p.allowsHost(h) {
			t.Errorf("allowsHost(%q) = true, want false", h)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "1.2.3.4/x", "http://x", "user@host", "a b"} {
		if _, err := NewPolicy([]string{bad}); err == nil {
			t.Errorf("NewPolicy(%q) accepted it", bad)
		}
	}
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	open, err := NewPolicy([]string{"127.0.0.1", "localhost", "10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		url      string
		policy   *Policy
		refused  bool
		contains string
	}{
		{"https://hooks.example.com/x", nil, false, ""},
		{"https://93.184.216.34/x", nil, false, ""},
		{"http://127.0.0.1:8080/x", nil, true, "loopback"},
		{"http://[::1]/x", nil, true, "loopback"},
		{"http://[::ffff:127.0.0.1]/x", nil, true, "loopback"},
		{"http://10.0.0.5/x", nil, true, "private"},
		{"http://192.168.0.1/x", nil, true, "private"},
		{"http://169.254.169.254/latest/meta-data", nil, true, "link-local"},
		{"http://[fe80::1%25eth0]/x", nil, true, "link-local"},
		{"http://100.64.1.1/x", nil, true, "carrier-grade"},
		{"http://[fd00::1]/x", nil, true, "private"},
		{"http://0.0.0.0/x", nil, true, "unspecified"},
		{"http://localhost:9000/x", nil, true, "loopback"},
		{"http://LOCALHOST./x", nil, true, "loopback"},
		{"http://api.localhost/x", nil, true, "loopback"},
		{"https://user:pass@hooks.example.com/x", nil, true, "user info"},
		{"https://token@hooks.example.com/x", nil, true, "user info"},
		{"https://user:pass@127.0.0.1/x", open, true, "user info"}, // allow-listing opens the host, not user info
		{"http://127.0.0.1:8080/x", open, false, ""},
		{"http://localhost:8080/x", open, false, ""},
		{"http://10.9.8.7/x", open, false, ""},
		{"http://192.168.0.1/x", open, true, "private"},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatalf("%s: %v", tt.url, err)
		}
		err = tt.policy.CheckURL(u)
		if (err != nil) != tt.refused {
			t.Errorf("CheckURL(%s) = %v, want refused=%v", tt.url, err, tt.refused)
			continue
		}
		if err != nil && (!IsRefused(err) || !strings.Contains(err.Error(), tt.contains)) {
			t.Errorf("CheckURL(%s) = %v, want a RefusedError mentioning %q", tt.url, err, tt.contains)
		}
	}
}

// TestDialRefusesAfterResolution dials only loopback: the refusals happen before any packet is sent, and
// the allowed connections go to a test server on 127.0.0.1.
func TestDialRefusesAfterResolution(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	ctx := context.Background()

	get := func(p *Policy, host string) error {
		tr := &http.Transport{DialContext: p.DialContext(nil)}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr}).Get("http://" + net.JoinHostPort(host, port) + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	// "localhost" resolves to loopback: refused when connecting, whatever the URL check said.
	for _, host := range []string{"127.0.0.1", "localhost"} {
		err := get(nil, host)
		if !IsRefused(err) {
			t.Errorf("GET via %s with no allow-list: %v, want a RefusedError", host, err)
		}
	}
	byAddr, _ := NewPolicy([]string{"127.0.0.0/8"})
	byName, _ := NewPolicy([]string{"localhost"})
	for _, tc := range []struct {
		p    *Policy
		host string
	}{{byAddr, "127.0.0.1"}, {byAddr, "localhost"}, {byName, "localhost"}} {
		if err := get(tc.p, tc.host); err != nil {
			t.Errorf("GET via %s, allowed: %v", tc.host, err)
		}
	}
	// Allowing a name does not allow its address under another name.
	if err := get(byName, "127.0.0.1"); !IsRefused(err) {
		t.Errorf("GET via 127.0.0.1 with only localhost allowed: %v, want a RefusedError", err)
	}

	// A Control function of the base dialer still runs for allowed addresses.
	errMine := errors.New("mine")
	var seen string
	d := &net.Dialer{Control: func(network, address string, _ syscall.RawConn) error { seen = address; return errMine }}
	_, err := byAddr.DialContext(d)(ctx, "tcp", "127.0.0.1:"+port)
	if !errors.Is(err, errMine) || seen != "127.0.0.1:"+port {
		t.Errorf("dial with the base dialer's Control: err %v, saw %q; want its error after seeing the address", err, seen)
	}
}

// FuzzCheckURL: CheckURL never panics, and never accepts user info, or a literal address that is not
// public, when nothing is allow-listed.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"http://127.0.0.1/", "http://[::ffff:10.0.0.1]:80/x", "https://u:p@h.example/",
		"http://[fe80::1%25en0]/", "http://LOCALHOST./", "http://0x7f.1/", "http://2130706433/", "http://h.example:99999/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		if (*Policy)(nil).CheckURL(u) != nil {
			return
		}
		if u.User != nil {
			t.Fatalf("accepted user info in %q", raw)
		}
		if a, err := netip.ParseAddr(u.Hostname()); err == nil {
			if reason, public := Classify(a); !public {
				t.Fatalf("accepted %q, whose host is %s", raw, reason)
			}
		}
	})
}
