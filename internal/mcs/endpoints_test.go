package mcs

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
)

// TestEndpointCheckAddresses: what one endpoint's address must be to reach consumers from a provider of an
// IPv4 Service, with and without reported pod CIDRs.
func TestEndpointCheckAddresses(t *testing.T) {
	ipv4 := &corev1.Service{Spec: corev1.ServiceSpec{IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}}}
	dual := &corev1.Service{Spec: corev1.ServiceSpec{IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}}}
	pods := []string{"10.244.0.0/16", "fd00:10:244::/56"}
	tests := []struct {
		name     string
		svc      *corev1.Service
		podCIDRs []string
		t        discoveryv1.AddressType
		address  string
		refused  string // part of why, "" when it passes
	}{
		{"a pod's address", ipv4, pods, discoveryv1.AddressTypeIPv4, "10.244.3.7", ""},
		{"any address when no pod CIDR is reported", ipv4, nil, discoveryv1.AddressTypeIPv4, "192.0.2.10", ""},
		{"outside the pod CIDRs", ipv4, pods, discoveryv1.AddressTypeIPv4, "10.96.0.1", "outside the cluster's pod CIDRs"},
		{"malformed pod CIDRs check nothing", ipv4, []string{"10.244/16"}, discoveryv1.AddressTypeIPv4, "192.0.2.10", ""},
		{"loopback", ipv4, nil, discoveryv1.AddressTypeIPv4, "127.0.0.1", "loopback"},
		{"loopback inside a reported range", ipv4, []string{"127.0.0.0/8"}, discoveryv1.AddressTypeIPv4, "127.0.0.1", "loopback"},
		{"IPv6 loopback", dual, nil, discoveryv1.AddressTypeIPv6, "::1", "loopback"},
		{"cloud metadata (link-local)", ipv4, nil, discoveryv1.AddressTypeIPv4, "169.254.169.254", "link-local"},
		{"IPv6 link-local", dual, nil, discoveryv1.AddressTypeIPv6, "fe80::1", "link-local"},
		{"unspecified", ipv4, nil, discoveryv1.AddressTypeIPv4, "0.0.0.0", "unspecified"},
		{"multicast", ipv4, nil, discoveryv1.AddressTypeIPv4, "239.1.2.3", "multicast"},
		{"IPv6 multicast", dual, nil, discoveryv1.AddressTypeIPv6, "ff05::2", "multicast"},
		{"an IPv6 address in an IPv4 slice", dual, nil, discoveryv1.AddressTypeIPv4, "fd00::1", "not an IPv4 address"},
		{"an IPv4-mapped address in an IPv6 slice", dual, nil, discoveryv1.AddressTypeIPv6, "::ffff:10.244.0.1", "not an IPv6 address"},
		{"an address with a zone", dual, nil, discoveryv1.AddressTypeIPv6, "fd00::1%eth0", "not an IPv6 address"},
		{"a name", ipv4, nil, discoveryv1.AddressTypeIPv4, "kubernetes.default", "not an IPv4 address"},
		{"the Service's other family", ipv4, nil, discoveryv1.AddressTypeIPv6, "fd00:10:244::5", "the Service's families are [IPv4]"},
		{"a pod's IPv6 address, dual-stack", dual, pods, discoveryv1.AddressTypeIPv6, "fd00:10:244::5", ""},
		{"no families listed: IPv6 is fine", &corev1.Service{}, nil, discoveryv1.AddressTypeIPv6, "fd00::5", ""},
		{"FQDN", &corev1.Service{}, nil, discoveryv1.AddressTypeFQDN, "example.com", "address type FQDN is not imported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			slice := discoveryv1.EndpointSlice{AddressType: tt.t, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{tt.address}}}}
			kept, refused := newEndpointCheck(tt.svc, tt.podCIDRs).filter([]discoveryv1.EndpointSlice{slice})
			passed := len(kept) == 1 && len(kept[0].Endpoints) == 1
			switch {
			case tt.refused == "" && (!passed || refused.any()):
				t.Fatalf("%s refused: %s", tt.address, refused)
			case tt.refused != "" && (passed || refused.endpoints != 1 || !strings.Contains(refused.first, tt.refused)):
				t.Fatalf("%s: kept %v, refused %+v, want refused for %q", tt.address, kept, refused, tt.refused)
			}
		})
	}
}

// TestEndpointCheckKeepsGoodEndpoints: of one slice only the bad endpoints go; hostnames stay only where they
// are DNS labels of an endpoint backed by a Pod; no member reference reaches consumers; and a provider's
// slices of one export beyond maxSlicesPerExport are refused whole.
func TestEndpointCheckKeepsGoodEndpoints(t *testing.T) {
	check := newEndpointCheck(&corev1.Service{Spec: corev1.ServiceSpec{IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}}}, []string{"10.1.0.0/16"})
	pod := func(name string) *corev1.ObjectReference {
		return &corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: name}
	}
	slice := discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{
		{Addresses: []string{"10.1.0.1"}, Hostname: ptr.To("web-0"), TargetRef: pod("web-0"), NodeName: ptr.To("node-1")},
		{Addresses: []string{"10.1.0.2", "127.0.0.1"}},
		{Addresses: []string{"10.1.0.3"}, Hostname: ptr.To("db"), TargetRef: &corev1.ObjectReference{Kind: "Node", Name: "db"}},
		{Addresses: []string{"10.1.0.4"}, Hostname: ptr.To("not.a.label"), TargetRef: pod("web-4")},
		{Addresses: []string{"10.1.0.5"}, Hostname: ptr.To("web-5")},
		{Addresses: []string{"10.2.0.6"}},
	}}
	kept, refused := check.filter([]discoveryv1.EndpointSlice{slice})
	if refused.endpoints != 2 || refused.hostnames != 3 || refused.slices != 0 {
		t.Errorf("refused %+v, want 2 endpoints and 3 hostnames", refused)
	}
	if len(kept) != 1 {
		t.Fatalf("%d slices kept, want 1", len(kept))
	}
	var got []string
	for _, e := range kept[0].Endpoints {
		got = append(got, fmt.Sprintf("%s/%s", e.Addresses[0], ptr.Deref(e.Hostname, "")))
		if e.TargetRef != nil || e.NodeName != nil {
			t.Errorf("endpoint %s keeps the member's reference %v or node %v", e.Addresses[0], e.TargetRef, e.NodeName)
		}
	}
	if want := []string{"10.1.0.1/web-0", "10.1.0.3/", "10.1.0.4/", "10.1.0.5/"}; !slices.Equal(got, want) {
		t.Errorf("endpoints %v, want %v", got, want)
	}
	if slice.Endpoints[0].TargetRef == nil {
		t.Error("the filter changed the reported slice")
	}

	many := make([]discoveryv1.EndpointSlice, maxSlicesPerExport+2)
	for i := range many {
		many[i] = discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.1.1.1"}}}}
		many[i].Name = fmt.Sprintf("shop.web-%03d", i)
	}
	kept, refused = check.filter(many)
	if len(kept) != maxSlicesPerExport || kept[len(kept)-1].Name != fmt.Sprintf("shop.web-%03d", maxSlicesPerExport-1) || refused.slices != 2 || refused.endpoints != 2 {
		t.Errorf("%d slices kept (last %s), refused %+v; want the first %d by name", len(kept), kept[len(kept)-1].Name, refused, maxSlicesPerExport)
	}
}
