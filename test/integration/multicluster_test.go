package integration

import (
	"context"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	"github.com/flotilla-io/flotilla/internal/mcs"
)

// reportedSlice is an EndpointSlice as an agent reports it to the hub.
func reportedSlice(namespace, name, cluster string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{
			mcs.LabelExportNamespace: "shop", mcs.LabelServiceName: "web", mcs.LabelSourceCluster: cluster}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}},
		Ports:       []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}},
	}
}

// TestAgentReportsEndpointSlicesOnlyInItsNamespace: an agent reads the export requests of its own cluster
// and writes EndpointSlice reports in its cluster's namespace; it can neither read another cluster's
// requests nor write, change or delete another cluster's reports, nor write slices anywhere else.
func TestAgentReportsEndpointSlicesOnlyInItsNamespace(t *testing.T) {
	ctx := context.Background()
	agentA, _ := join(t, env, "mcs-a", "id-mcs-a")
	join(t, env, "mcs-b", "id-mcs-b")
	own, other := "flotilla-cluster-mcs-a", "flotilla-cluster-mcs-b"
	for _, ns := range []string{own, other} {
		request := &mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop.web"}}
		if err := env.Client.Create(ctx, request); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Client.Create(ctx, reportedSlice(other, "shop.web-b", "mcs-b")); err != nil {
		t.Fatal(err)
	}

	allowed := map[string]func() error{
		"list own export requests": func() error {
			return agentA.List(ctx, &mcsv1alpha1.ServiceExportList{}, client.InNamespace(own))
		},
		"report, change and withdraw a slice in own namespace": func() error {
			s := reportedSlice(own, "shop.web-a", "mcs-a")
			if err := agentA.Create(ctx, s); err != nil {
				return err
			}
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.0.0.2"}})
			if err := agentA.Update(ctx, s); err != nil {
				return err
			}
			return agentA.Delete(ctx, s)
		},
	}
	for what, do := range allowed {
		if err := do(); err != nil {
			t.Errorf("agent of mcs-a cannot %s: %v", what, err)
		}
	}

	forbidden := map[string]func() error{
		"list the other cluster's export requests": func() error {
			return agentA.List(ctx, &mcsv1alpha1.ServiceExportList{}, client.InNamespace(other))
		},
		"create an export request": func() error {
			return agentA.Create(ctx, &mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: own, Name: "shop.db"}})
		},
		"report a slice in the other cluster's namespace": func() error {
			return agentA.Create(ctx, reportedSlice(other, "shop.web-forged", "mcs-b"))
		},
		"change the other cluster's slice": func() error {
			s := &discoveryv1.EndpointSlice{}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: other, Name: "shop.web-b"}, s); err != nil {
				return err
			}
			s.Endpoints = nil
			return agentA.Update(ctx, s)
		},
		"delete the other cluster's slice": func() error {
			return agentA.Delete(ctx, reportedSlice(other, "shop.web-b", "mcs-b"))
		},
		"list the other cluster's slices": func() error {
			return agentA.List(ctx, &discoveryv1.EndpointSliceList{}, client.InNamespace(other))
		},
		"write a slice in a user namespace": func() error {
			return agentA.Create(ctx, reportedSlice("default", "web-forged", "mcs-a"))
		},
	}
	for what, do := range forbidden {
		if err := do(); !apierrors.IsForbidden(err) {
			t.Errorf("agent of mcs-a may %s: got %v, want Forbidden", what, err)
		}
	}
}
