package clusterstatus

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// discoveryResult answers ServerGroupsAndResources with fixed lists and error, as a member's discovery would.
type discoveryResult struct {
	discovery.ServerResourcesInterface
	lists []*metav1.APIResourceList
	err   error
}

func (d discoveryResult) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	return nil, d.lists, d.err
}

func TestAPIEnablementsSaysWhetherTheListIsComplete(t *testing.T) {
	apps := &metav1.APIResourceList{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
		{Name: "deployments", Kind: "Deployment"}, {Name: "deployments/scale", Kind: "Scale"}}}
	metricsDown := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
		{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("the server is currently unable to handle the request")}}
	tests := []struct {
		name        string
		d           discoveryResult
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
		wantGVs     int
	}{
		{"every group discovered", discoveryResult{lists: []*metav1.APIResourceList{apps}}, metav1.ConditionTrue, ReasonDiscoveryComplete, "", 1},
		{"one aggregated group down", discoveryResult{lists: []*metav1.APIResourceList{apps}, err: metricsDown},
			metav1.ConditionFalse, ReasonDiscoveryPartial, "discovery failed for 1 group/versions, their last known resources are kept: metrics.k8s.io/v1beta1: the server is currently unable", 1},
		{"discovery fails altogether", discoveryResult{err: errors.New("connection reset")},
			metav1.ConditionFalse, ReasonDiscoveryFailed, "connection reset", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list, cond := apiEnablements(tt.d)
			if cond.Status != tt.wantStatus || cond.Reason != tt.wantReason || !strings.Contains(cond.Message, tt.wantMessage) {
				t.Fatalf("condition %s %s %q, want %s %s containing %q", cond.Status, cond.Reason, cond.Message, tt.wantStatus, tt.wantReason, tt.wantMessage)
			}
			if len(list) != tt.wantGVs {
				t.Fatalf("%d group/versions listed, want %d: %+v", len(list), tt.wantGVs, list)
			}
			if tt.wantGVs > 0 && (len(list[0].Resources) != 1 || list[0].Resources[0].Kind != "Deployment") {
				t.Fatalf("resources %+v, want deployments without subresources", list[0].Resources)
			}
		})
	}
}

func TestPodCIDRsAreMergedIntoTheFewestPrefixes(t *testing.T) {
	tests := []struct {
		name  string
		nodes [][]string
		want  []string
	}{
		{"no node has a range", [][]string{nil, nil}, nil},
		{"four neighbouring /24s make a /22", [][]string{{"10.244.2.0/24"}, {"10.244.0.0/24"}, {"10.244.3.0/24"}, {"10.244.1.0/24"}},
			[]string{"10.244.0.0/22"}},
		{"a hole keeps its neighbours apart", [][]string{{"10.244.0.0/24"}, {"10.244.1.0/24"}, {"10.244.3.0/24"}},
			[]string{"10.244.0.0/23", "10.244.3.0/24"}},
		{"a range inside another and a repeated one count once", [][]string{{"10.0.0.0/16"}, {"10.0.7.0/24"}, {"10.0.0.0/16"}},
			[]string{"10.0.0.0/16"}},
		{"dual-stack nodes keep both families apart", [][]string{{"10.1.0.0/24", "fd00:0:0:1::/64"}, {"10.1.1.0/24", "fd00::/64"}},
			[]string{"10.1.0.0/23", "fd00::/63"}},
		{"unmasked and malformed entries", [][]string{{"10.2.0.7/24"}, {"not-a-cidr"}}, []string{"10.2.0.0/24"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var nodes []corev1.Node
			for _, cidrs := range tt.nodes {
				nodes = append(nodes, corev1.Node{Spec: corev1.NodeSpec{PodCIDRs: cidrs}})
			}
			if got := podCIDRs(nodes); !slices.Equal(got, tt.want) {
				t.Fatalf("podCIDRs = %v, want %v", got, tt.want)
			}
		})
	}
}
