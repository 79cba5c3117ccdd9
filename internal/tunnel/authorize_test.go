package tunnel

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/registration"
)

func TestRefusal(t *testing.T) {
	agent := registration.AgentUser("m1", "0123456789abcdef")
	pull := func(change func(*clusterv1alpha1.Cluster)) *clusterv1alpha1.Cluster {
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "m1",
			Annotations: map[string]string{clusterv1alpha1.AnnotationAgentUser: agent}}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}}
		if change != nil {
			change(c)
		}
		return c
	}
	agents := []string{registration.AgentGroup, "system:authenticated"}
	tests := []struct {
		name    string
		user    user.Info
		cluster *clusterv1alpha1.Cluster
		want    string
	}{
		{"the cluster's current agent", &user.DefaultInfo{Name: agent, Groups: agents}, pull(nil), ""},
		{"another cluster's agent", &user.DefaultInfo{Name: registration.AgentUser("m2", "0123456789abcdef"), Groups: agents}, pull(nil), "only its current agent may"},
		{"an earlier registration's agent", &user.DefaultInfo{Name: registration.AgentUser("m1", "fedcba9876543210"), Groups: agents}, pull(nil), "only its current agent may"},
		{"the agent's name outside the agents' group", &user.DefaultInfo{Name: agent, Groups: []string{"system:authenticated"}}, pull(nil), "not in group"},
		{"a push cluster", &user.DefaultInfo{Name: agent, Groups: agents}, pull(func(c *clusterv1alpha1.Cluster) { c.Spec.SyncMode = clusterv1alpha1.Push }), "not a Pull cluster"},
		{"a cluster being removed", &user.DefaultInfo{Name: agent, Groups: agents}, pull(func(c *clusterv1alpha1.Cluster) { c.DeletionTimestamp = &metav1.Time{} }), "being removed"},
		{"no cluster", &user.DefaultInfo{Name: agent, Groups: agents}, nil, "no such cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := refusal(tt.user, tt.cluster)
			if (tt.want == "") != (got == "") || (tt.want != "" && !strings.Contains(got, tt.want)) {
				t.Fatalf("refusal = %q, want %q", got, tt.want)
			}
		})
	}
}
