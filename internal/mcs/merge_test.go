package mcs

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
)

func service(clusterIP string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: clusterIP, Ports: ports}}
}

func port(name string, number int32, protocol corev1.Protocol) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: number, Protocol: protocol}
}

func TestMerge(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	http := port("http", 80, corev1.ProtocolTCP)
	cases := []struct {
		name      string
		providers []Provider
		wantType  mcsv1alpha1.ServiceImportType
		wantPorts []mcsv1alpha1.ServicePort
		// wantConflicts are the conflict reasons, each with a piece of its message.
		wantConflicts map[mcsv1alpha1.ServiceExportConditionReason]string
	}{
		{name: "no providers"},
		{
			name:      "one provider, protocol defaulted",
			providers: []Provider{{Cluster: "m1", Since: t0, Service: service("", port("http", 80, ""))}},
			wantType:  mcsv1alpha1.ClusterSetIP,
			wantPorts: []mcsv1alpha1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
		{
			name: "ports are the union",
			providers: []Provider{
				{Cluster: "m1", Since: t0, Service: service("", http)},
				{Cluster: "m2", Since: t0, Service: service("", http, port("metrics", 9090, corev1.ProtocolTCP))},
			},
			wantType:  mcsv1alpha1.ClusterSetIP,
			wantPorts: []mcsv1alpha1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}, {Name: "metrics", Port: 9090, Protocol: corev1.ProtocolTCP}},
		},
		{
			name: "headless",
			providers: []Provider{
				{Cluster: "m1", Since: t0, Service: service(corev1.ClusterIPNone, http)},
				{Cluster: "m2", Since: t0, Service: service(corev1.ClusterIPNone, http)},
			},
			wantType:  mcsv1alpha1.Headless,
			wantPorts: []mcsv1alpha1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
		{
			name: "a port of one name with another number: the oldest export wins",
			providers: []Provider{
				{Cluster: "m2", Since: t0.Add(time.Minute), Service: service("", port("http", 8080, corev1.ProtocolTCP))},
				{Cluster: "m1", Since: t0, Service: service("", http)},
			},
			wantType:      mcsv1alpha1.ClusterSetIP,
			wantPorts:     []mcsv1alpha1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
			wantConflicts: map[mcsv1alpha1.ServiceExportConditionReason]string{mcsv1alpha1.ServiceExportReasonPortConflict: "cluster m2 exports port http 8080/TCP, m1 (older) http 80/TCP"},
		},
		{
			name: "one port number under two names",
			providers: []Provider{
				{Cluster: "m1", Since: t0, Service: service("", http)},
				{Cluster: "m2", Since: t0.Add(time.Second), Service: service("", port("web", 80, corev1.ProtocolTCP))},
			},
			wantType:      mcsv1alpha1.ClusterSetIP,
			wantPorts:     []mcsv1alpha1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
			wantConflicts: map[mcsv1alpha1.ServiceExportConditionReason]string{mcsv1alpha1.ServiceExportReasonPortConflict: "m2 exports port web 80/TCP"},
		},
		{
			name: "same age: the cluster name decides",
			providers: []Provider{
				{Cluster: "m2", Since: t0, Service: service("", port("http", 8080, corev1.ProtocolTCP))},
				{Cluster: "m1", Since: t0, Service: service("", http)},
			},
			wantType:      mcsv1alpha1.ClusterSetIP,
			wantPorts:     []mcsv1alpha1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
			wantConflicts: map[mcsv1alpha1.ServiceExportConditionReason]string{mcsv1alpha1.ServiceExportReasonPortConflict: "cluster m2"},
		},
		{
			name: "app protocol differs",
			providers: []Provider{
				{Cluster: "m1", Since: t0, Service: service("", http)},
				{Cluster: "m2", Since: t0.Add(time.Second), Service: service("", corev1.ServicePort{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, AppProtocol: ptr.To("h2c")})},
			},
			wantType:      mcsv1alpha1.ClusterSetIP,
			wantPorts:     []mcsv1alpha1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
			wantConflicts: map[mcsv1alpha1.ServiceExportConditionReason]string{mcsv1alpha1.ServiceExportReasonPortConflict: "(h2c)"},
		},
		{
			name: "type and session affinity conflicts",
			providers: []Provider{
				{Cluster: "m1", Since: t0, Service: service(corev1.ClusterIPNone, http)},
				{Cluster: "m2", Since: t0.Add(time.Second), Service: &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{http}, SessionAffinity: corev1.ServiceAffinityClientIP}}},
			},
			wantType:  mcsv1alpha1.Headless,
			wantPorts: []mcsv1alpha1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
			wantConflicts: map[mcsv1alpha1.ServiceExportConditionReason]string{
				mcsv1alpha1.ServiceExportReasonTypeConflict:            "cluster m2 exports a ClusterSetIP Service",
				mcsv1alpha1.ServiceExportReasonSessionAffinityConflict: "ClientIP",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec, conflicts := Merge(tc.providers)
			if spec.Type != tc.wantType {
				t.Errorf("type %q, want %q", spec.Type, tc.wantType)
			}
			if diff := cmp.Diff(tc.wantPorts, spec.Ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
			if len(conflicts) != len(tc.wantConflicts) {
				t.Fatalf("conflicts %+v, want %v", conflicts, tc.wantConflicts)
			}
			for _, c := range conflicts {
				want, ok := tc.wantConflicts[c.Reason]
				if !ok || !strings.Contains(c.Message, want) {
					t.Errorf("conflict %s %q, want one with %q", c.Reason, c.Message, want)
				}
			}
		})
	}
}
