package cli

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

func TestParseTaint(t *testing.T) {
	tests := []struct {
		in         string
		want       corev1.Taint
		wantRemove bool
		wantErr    string
	}{
		{in: "dedicated=gpu:NoSchedule", want: corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}},
		{in: "maintenance:NoExecute", want: corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoExecute}},
		{in: "dedicated:NoSchedule-", want: corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}, wantRemove: true},
		{in: "dedicated=gpu", wantErr: "want KEY[=VALUE]:EFFECT"},
		{in: "dedicated:Sometimes", wantErr: "effect must be NoSchedule, PreferNoSchedule or NoExecute"},
		{in: ":NoSchedule", wantErr: "the key is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, remove, err := parseTaint(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want || remove != tt.wantRemove {
				t.Fatalf("got %+v remove=%v err=%v", got, remove, err)
			}
		})
	}
}

func TestEventSource(t *testing.T) {
	for ns, want := range map[string]string{
		"default":                "hub",
		"flotilla-system":        "hub",
		"flotilla-cluster-m1":    "agent of m1",
		"flotilla-cluster-other": "agent of other",
		"team-a":                 "namespace team-a",
	} {
		if got := eventSource(ns); got != want {
			t.Errorf("eventSource(%q) = %q, want %q", ns, got, want)
		}
	}
}

func TestTunnelState(t *testing.T) {
	connected := metav1.Condition{Type: clusterv1alpha1.ClusterConditionTunnelConnected, Status: metav1.ConditionFalse}
	tests := []struct {
		mode       clusterv1alpha1.ClusterSyncMode
		conditions []metav1.Condition
		want       string
	}{
		{mode: clusterv1alpha1.Push, want: "-"},
		{mode: clusterv1alpha1.Pull, want: "Unknown"},
		{mode: clusterv1alpha1.Pull, conditions: []metav1.Condition{connected}, want: "False"},
	}
	for _, tt := range tests {
		cl := &clusterv1alpha1.Cluster{Spec: clusterv1alpha1.ClusterSpec{SyncMode: tt.mode}, Status: clusterv1alpha1.ClusterStatus{Conditions: tt.conditions}}
		if got := tunnelState(cl); got != tt.want {
			t.Errorf("tunnelState(%s, %v) = %q, want %q", tt.mode, tt.conditions, got, tt.want)
		}
	}
}
