package mcs

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// maxSlicesPerExport is how many of one provider's reported EndpointSlices of one export reach consumers;
// the rest are refused. At the member EndpointSlice controller's 100 endpoints a slice it is 10,000
// endpoints, more than a Service of one cluster has; it keeps one export of one member from filling the
// consumer Works, which hold every provider's slices of the export, while the namespace's ResourceQuota
// (registration.MaxReportedEndpointSlices) caps what the member reports for all its exports together.
const maxSlicesPerExport = 100

// endpointCheck is what one provider's reported endpoints of one export must be to reach consumers. A report
// is the member's word (its agent writes it, and anyone who may write EndpointSlices in the Service's
// namespace there can add to it), and consumers send the Service's traffic wherever it points.
type endpointCheck struct {
	// families are the address types of the provider's Service (its spec.ipFamilies); none: IPv4 and IPv6.
	families []discoveryv1.AddressType
	// podCIDRs are the ranges of the provider's pods (its Cluster's status.podCIDRs); none: not checked.
	podCIDRs []netip.Prefix
}

// newEndpointCheck is the check of the endpoints of svc as a cluster with the given pod CIDRs reports them.
// Malformed CIDRs are left out.
func newEndpointCheck(svc *corev1.Service, podCIDRs []string) endpointCheck {
	var c endpointCheck
	for _, f := range svc.Spec.IPFamilies {
		c.families = append(c.families, discoveryv1.AddressType(f))
	}
	for _, s := range podCIDRs {
		if p, err := netip.ParsePrefix(s); err == nil {
			c.podCIDRs = append(c.podCIDRs, p.Masked())
		}
	}
	return c
}

// refusals counts what the check took out of one provider's reports of one export.
type refusals struct {
	// endpoints refused, and slices refused whole (their endpoints counted in endpoints too).
	endpoints, slices int
	// hostnames dropped from endpoints that were kept.
	hostnames int
	// first says why the first refusal was made, for a person to act on.
	first string
}

func (r *refusals) add(why string) {
	if r.first == "" {
		r.first = why
	}
}

// any reports whether anything was refused.
func (r refusals) any() bool { return r.first != "" }

// String says what was refused, for the ServiceExport's EndpointsValid condition and the log.
func (r refusals) String() string {
	var parts []string
	if r.slices > 0 {
		parts = append(parts, fmt.Sprintf("slices refused whole: %d", r.slices))
	}
	if r.endpoints > 0 {
		parts = append(parts, fmt.Sprintf("endpoints refused: %d", r.endpoints))
	}
	if r.hostnames > 0 {
		parts = append(parts, fmt.Sprintf("hostnames dropped: %d", r.hostnames))
	}
	return strings.Join(parts, ", ") + " (first: " + r.first + ")"
}

// filter returns the reported slices as consumers get them: only endpoints whose addresses pass address,
// hostnames only where they name a Pod, the member's pod references and node names left out (they mean
// nothing elsewhere), and at most maxSlicesPerExport slices (the first by name). A slice whose address type
// the Service does not have (or FQDN) is refused whole.
func (c endpointCheck) filter(reported []discoveryv1.EndpointSlice) ([]discoveryv1.EndpointSlice, refusals) {
	reported = slices.Clone(reported)
	slices.SortFunc(reported, func(a, b discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
	var kept []discoveryv1.EndpointSlice
	var r refusals
	for i, s := range reported {
		if why := c.addressType(s.AddressType); why != "" || i >= maxSlicesPerExport {
			if why == "" {
				why = fmt.Sprintf("more than %d slices reported", maxSlicesPerExport)
			}
			r.slices++
			r.endpoints += len(s.Endpoints)
			r.add(fmt.Sprintf("slice %s: %s", s.Name, why))
			continue
		}
		out := *s.DeepCopy()
		out.Endpoints = nil
		for _, e := range s.Endpoints {
			if why := c.addresses(s.AddressType, e.Addresses); why != "" {
				r.endpoints++
				r.add(why)
				continue
			}
			e := *e.DeepCopy()
			if why := hostname(&e); why != "" {
				e.Hostname = nil
				r.hostnames++
				r.add(why)
			}
			e.TargetRef, e.NodeName = nil, nil
			out.Endpoints = append(out.Endpoints, e)
		}
		kept = append(kept, out)
	}
	return kept, r
}

// addressType says why a slice of type t may not reach consumers, or "" when it may.
func (c endpointCheck) addressType(t discoveryv1.AddressType) string {
	switch {
	case t != discoveryv1.AddressTypeIPv4 && t != discoveryv1.AddressTypeIPv6:
		return fmt.Sprintf("address type %s is not imported", t)
	case len(c.families) > 0 && !slices.Contains(c.families, t):
		return fmt.Sprintf("address type %s, the Service's families are %v", t, c.families)
	}
	return ""
}

// addresses says why an endpoint with these addresses, in a slice of type t, may not reach consumers, or ""
// when it may: each must be an address of type t that is neither loopback, link-local, unspecified nor
// multicast, and inside the provider's pod CIDRs when it reported any. (Recent API servers refuse loopback
// and link-local addresses and the other family in EndpointSlices already; these checks do not rely on it.)
func (c endpointCheck) addresses(t discoveryv1.AddressType, addresses []string) string {
	for _, s := range addresses {
		a, err := netip.ParseAddr(s)
		switch {
		case err != nil || a.Zone() != "" || a.Is4In6() || a.Is4() != (t == discoveryv1.AddressTypeIPv4):
			return fmt.Sprintf("%q is not an %s address", s, t)
		case a.IsLoopback():
			return s + " is a loopback address"
		case a.IsLinkLocalUnicast():
			return s + " is a link-local address"
		case a.IsUnspecified():
			return s + " is the unspecified address"
		case a.IsMulticast():
			return s + " is a multicast address"
		case len(c.podCIDRs) > 0 && !slices.ContainsFunc(c.podCIDRs, func(p netip.Prefix) bool { return p.Contains(a) }):
			return s + " is outside the cluster's pod CIDRs"
		}
	}
	return ""
}

// hostname says why an endpoint's hostname may not reach consumers, or "" when it may (or it has none): it
// must be a DNS label and name a Pod, as the member's EndpointSlice controller writes them.
func hostname(e *discoveryv1.Endpoint) string {
	switch {
	case e.Hostname == nil:
		return ""
	case len(validation.IsDNS1123Label(*e.Hostname)) > 0:
		return fmt.Sprintf("hostname %q is not a DNS label", *e.Hostname)
	case e.TargetRef == nil || e.TargetRef.Kind != "Pod":
		return fmt.Sprintf("hostname %s names no Pod", *e.Hostname)
	}
	return ""
}
