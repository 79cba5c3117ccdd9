package helmrelease

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// transport is the HTTP transport the hub fetches charts with. A HelmRelease is written by a namespace's
// users, and its repo makes the hub send requests from inside the hub's network: the transport refuses to
// connect to a link-local address (the cloud metadata endpoints live there), an unspecified or multicast one,
// and, unless allowLoopback (a local fleet, hub --allow-local-chart-repositories), to the hub's own machine.
// It checks the address it is about to connect to, after name resolution and on every redirect, so a name
// that resolves to such an address is refused as well. Private networks stay reachable: that is where
// in-house chart repositories live. A proxy from the environment is used as Helm uses it; the proxy's own
// policy then applies.
func transport(allowLoopback bool) *http.Transport {
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		return checkAddress(address, allowLoopback)
	}}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = dialer.DialContext
	return t
}

// checkAddress refuses an IP:port the hub must not fetch charts from.
func checkAddress(address string, allowLoopback bool) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("chart repository address %s: %w", address, err)
	}
	ip := ap.Addr().Unmap()
	switch {
	case ip.IsLoopback() && allowLoopback:
		return nil
	case ip.IsLoopback(), ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(), ip.IsUnspecified(), ip.IsMulticast():
		return fmt.Errorf("chart repository address %s is refused: the hub fetches charts from no loopback, link-local, unspecified or multicast address (a hub for a local fleet runs with --allow-local-chart-repositories)", address)
	}
	return nil
}
