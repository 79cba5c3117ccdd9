package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/mcs"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// servicePolicy places Service namespace/name on clusters, tolerating the hub's health taints (the pull
// clusters of these tests have no agent).
func servicePolicy(namespace, name string, clusters ...string) *policyv1alpha1.PropagationPolicy {
	p := tolerantPolicy(namespace, name, clusters)
	p.Spec.ResourceSelectors = []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Service", Name: name}}
	return p
}

// consumerSlices decodes the EndpointSlices of a consumer Work, by name.
func consumerSlices(w *workv1alpha1.Work) (map[string]*discoveryv1.EndpointSlice, error) {
	out := map[string]*discoveryv1.EndpointSlice{}
	for _, m := range w.Spec.Workload.Manifests {
		s := &discoveryv1.EndpointSlice{}
		if err := json.Unmarshal(m.Raw, s); err != nil {
			return nil, err
		}
		if s.Kind == "EndpointSlice" {
			out[s.Name] = s
		}
	}
	return out, nil
}

// consumerImportClusters reads the status.clusters of the ServiceImport a consumer Work places.
func consumerImportClusters(w *workv1alpha1.Work) ([]string, error) {
	for _, m := range w.Spec.Workload.Manifests {
		imp := &mcsv1alpha1.ServiceImport{}
		if err := json.Unmarshal(m.Raw, imp); err != nil {
			return nil, err
		}
		if imp.Kind == "ServiceImport" {
			var out []string
			for _, c := range imp.Status.Clusters {
				out = append(out, c.Cluster)
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("no ServiceImport among %d manifests", len(w.Spec.Workload.Manifests))
}

// TestPushMemberProvidesAnExportedService: a Push member (the test hub itself, reached with a service
// account token) runs an exported Service. The hub's collector reports the member's EndpointSlice in the
// cluster's namespace with the MCS labels, the ServiceImport is built with the member as its cluster, the
// consumer's Work carries the slice and the member in its ServiceImport's status.clusters, a change of the member's slice follows, and once the Service's placement
// leaves the member its reports, its request and its endpoints in the consumer go while the member's own
// Service and slice stay.
func TestPushMemberProvidesAnExportedService(t *testing.T) {
	ctx := context.Background()
	const ns, provider, consumer = "mcs-push", "mcs-push", "mcs-push-consumer"
	token := memberToken(t)
	pushCluster(t, provider, map[string][]byte{"token": []byte(token), "caBundle": env.Config.CAData}, nil)
	placeableCluster(t, consumer, nil)
	updateClusterStatus(t, consumer, func(s *clusterv1alpha1.ClusterStatus) {
		s.APIEnablements = []clusterv1alpha1.APIEnablement{{GroupVersion: "v1", Resources: []clusterv1alpha1.APIResource{
			{Name: "configmaps", Kind: "ConfigMap"}, {Name: "services", Kind: "Service"}}}}
	})
	createNamespace(t, ns)
	create(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}})
	policy := servicePolicy(ns, "web", provider)
	create(t, policy)
	// The member is the hub: the Service the member runs is the template itself, and its slice is the one the
	// member's EndpointSlice controller would write.
	memberSlice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-member", Labels: map[string]string{
			discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "endpointslice-test.flotilla.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.7.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	create(t, memberSlice)
	export := &mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web",
		Annotations: map[string]string{mcs.AnnotationConsumers: consumer}}}
	create(t, export)

	report := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ClusterNamespace(provider), Name: ns + ".web-member"}}
	reportHas := func(addresses ...string) {
		t.Helper()
		testenv.Eventually(t, time.Minute, fmt.Sprintf("the hub's report of the member's slice holding %v", addresses), func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(report), report); err != nil {
				return err
			}
			want := map[string]string{mcs.LabelServiceName: "web", mcs.LabelSourceCluster: provider, mcs.LabelExportNamespace: ns}
			for k, v := range want {
				if report.Labels[k] != v {
					return fmt.Errorf("label %s=%q, want %q", k, report.Labels[k], v)
				}
			}
			var got []string
			for _, e := range report.Endpoints {
				got = append(got, e.Addresses...)
			}
			if !slices.Equal(got, addresses) {
				return fmt.Errorf("addresses %v", got)
			}
			return nil
		})
	}
	consumerWork := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ClusterNamespace(consumer), Name: mcs.ConsumerWorkName(ns, "web")}}
	importedName := "imported-" + provider + "-web-member"
	consumerHas := func(addresses ...string) {
		t.Helper()
		testenv.Eventually(t, time.Minute, fmt.Sprintf("the consumer's Work holding %v from %s", addresses, provider), func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(consumerWork), consumerWork); err != nil {
				return err
			}
			imported, err := consumerSlices(consumerWork)
			if err != nil {
				return err
			}
			clusters, err := consumerImportClusters(consumerWork)
			if err != nil {
				return err
			}
			s, ok := imported[importedName]
			if len(addresses) == 0 {
				if ok || len(clusters) != 0 {
					return fmt.Errorf("slice %s still imported (%v), the ServiceImport's clusters %v", importedName, ok, clusters)
				}
				return nil
			}
			if !slices.Equal(clusters, []string{provider}) {
				return fmt.Errorf("the ServiceImport's status.clusters %v", clusters)
			}
			if !ok {
				return fmt.Errorf("no slice %s among %d", importedName, len(imported))
			}
			if s.Labels[mcs.LabelSourceCluster] != provider {
				return fmt.Errorf("source cluster %q", s.Labels[mcs.LabelSourceCluster])
			}
			if len(s.Endpoints) != len(addresses) || s.Endpoints[0].Addresses[0] != addresses[0] {
				return fmt.Errorf("endpoints %+v", s.Endpoints)
			}
			return nil
		})
	}
	importClusters := func(want ...string) {
		t.Helper()
		testenv.Eventually(t, time.Minute, fmt.Sprintf("the hub's ServiceImport from %v", want), func() error {
			imp := &mcsv1alpha1.ServiceImport{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(export), imp); err != nil {
				return err
			}
			if imp.Spec.Type != mcsv1alpha1.ClusterSetIP || len(imp.Spec.Ports) != 1 || imp.Spec.Ports[0].Port != 80 {
				return fmt.Errorf("spec %+v", imp.Spec)
			}
			var got []string
			for _, c := range imp.Status.Clusters {
				got = append(got, c.Cluster)
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("status.clusters %v", got)
			}
			return nil
		})
	}

	reportHas("10.7.0.1")
	importClusters(provider)
	consumerHas("10.7.0.1")

	t.Run("a change of the member's slice reaches the hub and the consumer", func(t *testing.T) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(memberSlice), memberSlice); err != nil {
			t.Fatal(err)
		}
		memberSlice.Endpoints = append(memberSlice.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.7.0.2"}})
		if err := env.Client.Update(ctx, memberSlice); err != nil {
			t.Fatal(err)
		}
		reportHas("10.7.0.1", "10.7.0.2")
		consumerHas("10.7.0.1", "10.7.0.2")
	})

	t.Run("the placement leaves the member: its reports and endpoints go, its objects stay", func(t *testing.T) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(policy), policy); err != nil {
			t.Fatal(err)
		}
		policy.Spec.Placement.ClusterAffinity.ClusterNames = []string{consumer}
		if err := env.Client.Update(ctx, policy); err != nil {
			t.Fatal(err)
		}
		testenv.EventuallyGone(t, env.Client, report, time.Minute)
		testenv.EventuallyGone(t, env.Client, &mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{
			Namespace: clusterv1alpha1.ClusterNamespace(provider), Name: ns + ".web"}}, time.Minute)
		importClusters()
		consumerHas()
		for _, o := range []client.Object{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}, memberSlice} {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil || o.GetDeletionTimestamp() != nil {
				t.Errorf("the member's %T %s went with the placement: %v", o, o.GetName(), err)
			}
		}
		list := &discoveryv1.EndpointSliceList{}
		if err := env.Client.List(ctx, list, client.InNamespace(clusterv1alpha1.ClusterNamespace(provider))); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		if len(list.Items) != 0 {
			t.Errorf("%d slices left in the member's cluster namespace", len(list.Items))
		}
	})
}
