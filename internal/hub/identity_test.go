package hub

import (
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/flotilla-io/flotilla/internal/registration"
)

func TestHubComponent(t *testing.T) {
	for _, c := range []struct {
		user      user.Info
		component bool
	}{
		{&user.DefaultInfo{Name: ControllersUser}, true},
		{&user.DefaultInfo{Name: "system:flotilla:agent:member1", Groups: []string{registration.AgentGroup, user.AllAuthenticated}}, true},
		{&user.DefaultInfo{Name: user.APIServerUser, Groups: []string{user.SystemPrivilegedGroup}}, true},
		{&user.DefaultInfo{Name: user.KubeControllerManager}, true},
		{&user.DefaultInfo{Name: "system:serviceaccount:kube-system:generic-garbage-collector"}, true},
		// People and their tools, including the admin and service accounts outside kube-system.
		{&user.DefaultInfo{Name: "kubernetes-admin", Groups: []string{user.SystemPrivilegedGroup}}, false},
		{&user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}, false},
		{&user.DefaultInfo{Name: "system:serviceaccount:argocd:argocd-application-controller"}, false},
	} {
		if got := hubComponent(c.user); got != c.component {
			t.Errorf("hubComponent(%s %v) = %v, want %v", c.user.GetName(), c.user.GetGroups(), got, c.component)
		}
	}
}
