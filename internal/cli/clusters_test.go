package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

func TestJoinValidate(t *testing.T) {
	const hash = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	tests := []struct {
		name    string
		o       joinOptions
		args    []string
		wantErr string
	}{
		{"pull ok", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", caCertHashes: []string{hash}, clusterName: "m1"}, []string{"https://hub:6443"}, ""},
		{"pull without hub URL", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", caCertHashes: []string{hash}, clusterName: "m1"}, nil, "needs the hub URL"},
		{"plain http hub", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", caCertHashes: []string{hash}, clusterName: "m1"}, []string{"http://hub"}, "want https://HOST:PORT"},
		{"malformed token", joinOptions{mode: "pull", token: "abc", caCertHashes: []string{hash}, clusterName: "m1"}, []string{"https://hub"}, "want a bootstrap token"},
		{"malformed hash", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", caCertHashes: []string{"abc"}, clusterName: "m1"}, []string{"https://hub"}, "--ca-cert-hash"},
		{"invalid name", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", caCertHashes: []string{hash}, clusterName: "M_1"}, []string{"https://hub"}, `--cluster-name: cluster name "M_1" is invalid`},
		{"name too long for its namespace", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", caCertHashes: []string{hash}, clusterName: strings.Repeat("a", 47)},
			[]string{"https://hub"}, "a cluster name is at most 46 characters"},
		{"name of 46 characters", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", caCertHashes: []string{hash}, clusterName: strings.Repeat("a", 46)},
			[]string{"https://hub"}, ""},
		{"token from a file", joinOptions{mode: "pull", tokenFile: "FILE", caCertHashes: []string{hash}, clusterName: "m1"}, []string{"https://hub"}, ""},
		{"token from the environment", joinOptions{mode: "pull", caCertHashes: []string{hash}, clusterName: "m1"}, []string{"https://hub"}, ""},
		{"token twice", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", tokenFile: "FILE", caCertHashes: []string{hash}, clusterName: "m1"},
			[]string{"https://hub"}, "give the token one way"},
		{"no token", joinOptions{mode: "pull", caCertHashes: []string{hash}, clusterName: "m1"}, []string{"https://hub"}, "want a bootstrap token"},
		{"missing hash", joinOptions{mode: "pull", token: "abcdef.0123456789abcdef", clusterName: "m1"}, []string{"https://hub"}, "--ca-cert-hash is required"},
		{"missing name", joinOptions{mode: "push"}, nil, "--cluster-name is required"},
		{"bad labels", joinOptions{mode: "push", clusterName: "m1", labels: "a=b=c"}, nil, "--labels"},
		{"push with a token", joinOptions{mode: "push", clusterName: "m1", token: "abcdef.0123456789abcdef"}, nil, "push mode takes no hub URL"},
		{"push without member kubeconfig", joinOptions{mode: "push", clusterName: "m1"}, nil, "push mode needs --cluster-kubeconfig"},
		{"unknown mode", joinOptions{mode: "both", clusterName: "m1"}, nil, `--mode "both"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			if o.tokenFile == "FILE" {
				o.tokenFile = filepath.Join(t.TempDir(), "token")
				if err := os.WriteFile(o.tokenFile, []byte("abcdef.0123456789abcdef\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tt.name == "token from the environment" {
				t.Setenv(tokenEnv, "abcdef.0123456789abcdef")
			}
			o.agent.CertTTL = 24 * time.Hour
			o.agent.DataDir = t.TempDir()
			err := o.validate(tt.args)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
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
