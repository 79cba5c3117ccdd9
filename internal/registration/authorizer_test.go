package registration

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// TestAgentAuthorizer: an agent may read its own Cluster, apply its status and open its tunnel, and only
// while it is the Cluster's current agent; about anything else the authorizer has no opinion (RBAC decides).
func TestAgentAuthorizer(t *testing.T) {
	current, earlier := AgentUser("m1", "0123456789abcdef"), AgentUser("m1", "fedcba9876543210")
	cluster := func(name, agent string, mode clusterv1alpha1.ClusterSyncMode) *clusterv1alpha1.Cluster {
		return &clusterv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{clusterv1alpha1.AnnotationAgentUser: agent}},
			Spec:       clusterv1alpha1.ClusterSpec{SyncMode: mode},
		}
	}
	hub := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(
		cluster("m1", current, clusterv1alpha1.Pull),
		cluster("m2", AgentUser("m2", "0123456789abcdef"), clusterv1alpha1.Pull),
		cluster("p1", AgentUser("p1", "0123456789abcdef"), clusterv1alpha1.Push),
	).Build()
	// A cache that still shows m1 with its earlier agent: the authorizer reads the API server before it
	// refuses.
	stale := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(cluster("m1", earlier, clusterv1alpha1.Pull)).Build()
	agent := func(name string) user.Info { return &user.DefaultInfo{Name: name, Groups: []string{AgentGroup}} }
	request := func(u user.Info, group, sub, verb, name string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, ResourceRequest: true, APIGroup: group, Resource: "clusters", Subresource: sub, Verb: verb, Name: name}
	}
	group := clusterv1alpha1.GroupVersion.Group
	allow, none := authorizer.DecisionAllow, authorizer.DecisionNoOpinion
	tests := []struct {
		name   string
		cached client.Reader
		attrs  authorizer.AttributesRecord
		want   authorizer.Decision
	}{
		{"get own Cluster", hub, request(agent(current), group, "", "get", "m1"), allow},
		{"apply own status", hub, request(agent(current), group, "status", "patch", "m1"), allow},
		{"open own tunnel", hub, request(agent(current), proxyv1alpha1.GroupName, proxyv1alpha1.SubresourceAttach, "create", "m1"), allow},
		{"cache behind a re-registration", stale, request(agent(current), group, "", "get", "m1"), allow},
		{"an earlier registration's agent", hub, request(agent(earlier), group, "", "get", "m1"), none},
		{"the other Cluster", hub, request(agent(current), group, "", "get", "m2"), none},
		{"list Clusters", hub, request(agent(current), group, "", "list", ""), none},
		{"watch own Cluster", hub, request(agent(current), group, "", "watch", "m1"), none},
		{"update own Cluster", hub, request(agent(current), group, "", "update", "m1"), none},
		{"patch own Cluster", hub, request(agent(current), group, "", "patch", "m1"), none},
		{"replace own status", hub, request(agent(current), group, "status", "update", "m1"), none},
		{"delete own Cluster", hub, request(agent(current), group, "", "delete", "m1"), none},
		{"own Cluster's proxy", hub, request(agent(current), proxyv1alpha1.GroupName, proxyv1alpha1.SubresourceProxy, "get", "m1"), none},
		{"same name in another group", hub, request(agent(current), "example.com", "", "get", "m1"), none},
		{"not in the agents' group", hub, request(&user.DefaultInfo{Name: current}, group, "", "get", "m1"), none},
		{"not an agent", hub, request(&user.DefaultInfo{Name: "m1", Groups: []string{AgentGroup}}, group, "", "get", "m1"), none},
		{"a Push cluster's name", hub, request(agent(AgentUser("p1", "0123456789abcdef")), group, "", "get", "p1"), none},
		{"no such cluster", hub, request(agent(AgentUser("gone", "0123456789abcdef")), group, "", "get", "gone"), none},
		{"non-resource URL", hub, authorizer.AttributesRecord{User: agent(current), Verb: "get", Path: "/apis"}, none},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &AgentAuthorizer{}
			a.Use(tt.cached, hub)
			got, reason, err := a.Authorize(context.Background(), tt.attrs)
			if got != tt.want || err != nil {
				t.Fatalf("decision %v (%q, %v), want %v", got, reason, err, tt.want)
			}
		})
	}

	t.Run("before its cache is given, no opinion and an error", func(t *testing.T) {
		got, _, err := (&AgentAuthorizer{}).Authorize(context.Background(), request(agent(current), group, "", "get", "m1"))
		if got != none || err == nil {
			t.Fatalf("decision %v, error %v; want no opinion and an error", got, err)
		}
	})
	t.Run("a failed read is no permission", func(t *testing.T) {
		a := &AgentAuthorizer{}
		a.Use(failingReader{}, failingReader{})
		got, _, err := a.Authorize(context.Background(), request(agent(current), group, "", "get", "m1"))
		if got != none || err == nil {
			t.Fatalf("decision %v, error %v; want no opinion and the read's error", got, err)
		}
	})
}

type failingReader struct{ client.Reader }

func (failingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("etcd unavailable")
}
