// Package egress decides which network destinations the coordinator's outgoing webhook deliveries may
// reach. A callback_url is chosen by a client, so without a check any client could make the coordinator
// POST to services on its own network (server-side request forgery). By default only public addresses
// are reached; an allow-list opens named hosts and address ranges.
//
// The decisive check runs when connecting ([Policy.DialContext]): on the address actually dialled, after
// DNS resolution, so a name that resolves (or is re-pointed) to a private address is refused as well.
// [Policy.CheckURL] refuses early what a URL shows without a lookup.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// Policy is an allow-list of non-public destinations. The zero Policy (or nil) allows public addresses
// only. It is immutable and safe for concurrent use.
type Policy struct {
	hosts    map[string]bool
	prefixes []netip.Prefix
}

// NewPolicy parses an allow-list. Each entry is a host name, matched exactly and case-insensitively
// ("hooks.internal", "localhost"), an IP address ("127.0.0.1", "::1") or a CIDR prefix
// ("10.1.0.0/16"). An allowed name may resolve to any address; an allowed address or prefix opens
// whatever name leads there.
func NewPolicy(allow []string) (*Policy, error) {
	p := &Policy{hosts: map[string]bool{}}
	for _, entry := range allow {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		if strings.Contains(entry, "/") {
			pre, err := netip.ParsePrefix(entry)
			if err != nil {
				return nil, fmt.Errorf("egress: allow-list entry %q is not a valid CIDR prefix", entry)
			}
			p.prefixes = append(p.prefixes, pre.Masked())
			continue
		}
		if a, err := netip.ParseAddr(strings.Trim(entry, "[]")); err == nil {
			a = a.Unmap().WithZone("")
			p.prefixes = append(p.prefixes, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		name := canonicalHost(entry)
		if name == "" || strings.ContainsAny(name, " :/@?#") {
			return nil, fmt.Errorf("egress: allow-list entry %q is neither a host name, an IP address nor a CIDR prefix", entry)
		}
		p.hosts[name] = true
	}
	return p, nil
}

func canonicalHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// allowsHost reports whether the host name (or literal address) of a URL is allow-listed as such.
func (p *Policy) allowsHost(host string) bool {
	if p == nil {
		return false
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return p.allowsAddr(a)
	}
	return p.hosts[canonicalHost(host)]
}

func (p *Policy) allowsAddr(a netip.Addr) bool {
	if p == nil {
		return false
	}
	a = a.Unmap().WithZone("")
	for _, pre := range p.prefixes {
		if pre.Contains(a) {
			return true
		}
	}
	return false
}

// RefusedError is a destination the policy does not allow.
type RefusedError struct {
	// Host is the host the URL names.
	Host string
	// Addr is the refused address (invalid when the URL itself was refused, before any lookup).
	Addr netip.Addr
	// Reason says what is wrong: "a loopback address", "user info in the URL", ….
	Reason string
}

func (e *RefusedError) Error() string {
	switch {
	case e.Addr.IsValid() && e.Host != e.Addr.String():
		return fmt.Sprintf("destination refused: %s resolves to %s, %s (webhooks reach public addresses only, unless allow-listed)", e.Host, e.Addr, e.Reason)
	case e.Addr.IsValid():
		return fmt.Sprintf("destination refused: %s is %s (webhooks reach public addresses only, unless allow-listed)", e.Addr, e.Reason)
	default:
		return fmt.Sprintf("destination refused: %s", e.Reason)
	}
}

// IsRefused reports whether err is, or wraps, a [RefusedError].
func IsRefused(err error) bool {
	var re *RefusedError
	return errors.As(err, &re)
}

// CheckURL refuses what the URL itself shows to be off-limits, without a DNS lookup: user info
// ("user:pass@"), which a URL must not carry (it would be stored with the run and shown to whoever reads
// it), a literal IP address that is not public, and the localhost names ("localhost", "*.localhost"),
// unless allowed. Names are resolved, and checked, only when connecting.
func (p *Policy) CheckURL(u *url.URL) error {
	host := u.Hostname()
	if u.User != nil {
		return &RefusedError{Host: host, Reason: "a URL with user info (user:password@) is not accepted; authenticate the request by its signature"}
	}
	if p.allowsHost(host) {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if reason, public := Classify(a); !public {
			return &RefusedError{Host: host, Addr: a.Unmap(), Reason: reason}
		}
		return nil
	}
	if name := canonicalHost(host); name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return &RefusedError{Host: host, Reason: fmt.Sprintf("%s names this machine (loopback); webhooks reach public addresses only, unless allow-listed", host)}
	}
	return nil
}

// DialContext dials like d (a nil d is a zero net.Dialer) and refuses connections the policy does not
// allow: unless the host (a name or an address) is allow-listed, every address the dialer tries — after
// DNS resolution, so no lookup trick gets around it — must be public or within an allowed prefix. A
// refused connection fails with an error that wraps a [RefusedError]. Set it as an http.Transport's
// DialContext, with no proxy (a proxy would be the address checked).
func (p *Policy) DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var base net.Dialer
	if d != nil {
		base = *d
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if p.allowsHost(host) {
			return base.DialContext(ctx, network, addr)
		}
		guarded := base
		inner := base.ControlContext
		guarded.Control = nil
		guarded.ControlContext = func(ctx context.Context, network, address string, c syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &RefusedError{Host: host, Reason: fmt.Sprintf("cannot tell the address %q", address)}
			}
			a := ap.Addr().Unmap().WithZone("")
			if !p.allowsAddr(a) {
				if reason, public := Classify(a); !public {
					return &RefusedError{Host: host, Addr: a, Reason: reason}
				}
			}
			switch {
			case inner != nil:
				return inner(ctx, network, address, c)
			case base.Control != nil:
				return base.Control(network, address, c)
			}
			return nil
		}
		return guarded.DialContext(ctx, network, addr)
	}
}

// nonPublic are the special-purpose ranges (IANA's IPv4 and IPv6 special-purpose address registries)
// that are not globally reachable, beyond what netip's predicates name.
var nonPublic = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), `a "this network" address`},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier-grade NAT) address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol assignment"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
	{netip.MustParsePrefix("192.88.99.0/24"), "a 6to4 relay anycast address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible (deprecated) address"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "an IPv4-translated address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local-use NAT64 address"},
	{netip.MustParsePrefix("100::/64"), "a discard-only address"},
	{netip.MustParsePrefix("2001::/23"), "an IETF protocol assignment (Teredo, ORCHID, …)"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
	{netip.MustParsePrefix("3fff::/20"), "a documentation address"},
	{netip.MustParsePrefix("5f00::/16"), "a segment-routing address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local (deprecated) address"},
}

// Embedded IPv4: NAT64 (RFC 6052) and 6to4 (RFC 3056) addresses carry an IPv4 address that decides where
// they lead.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// Classify reports whether a is a public (globally reachable unicast) address, and if not, what it is
// ("a loopback address", "a private address", …). IPv4-mapped, NAT64 and 6to4 addresses are judged by the
// IPv4 address they carry.
func Classify(a netip.Addr) (reason string, public bool) {
	a = a.Unmap().WithZone("")
	switch {
	case !a.IsValid():
		return "not an IP address", false
	case a.IsUnspecified():
		return "an unspecified address", false
	case a.IsLoopback():
		return "a loopback address", false
	case a.IsPrivate():
		return "a private address", false
	case a.IsLinkLocalUnicast():
		return "a link-local address", false
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "a multicast address", false
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "the broadcast address", false
	}
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			return embedded(netip.AddrFrom4([4]byte(b[12:16])), "NAT64")
		case sixToFour.Contains(a):
			return embedded(netip.AddrFrom4([4]byte(b[2:6])), "6to4")
		}
	}
	for _, np := range nonPublic {
		if np.prefix.Contains(a) {
			return np.reason, false
		}
	}
	return "", true
}

func embedded(v4 netip.Addr, kind string) (string, bool) {
	if reason, public := Classify(v4); !public {
		return fmt.Sprintf("a %s address of %s, %s", kind, v4, reason), false
	}
	return "", true
}
