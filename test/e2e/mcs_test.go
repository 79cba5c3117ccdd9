package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/mcs"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestMultiClusterServices: Service web, backed by a Deployment divided over m1 and m2, is exported; m3
// imports it and holds exactly the providers' pod IPs, each slice labelled with its source cluster. A
// scale-out follows, and so do a provider leaving and coming back; providers that disagree on a port are reported on the export; a frozen provider's
// endpoints are withdrawn after the grace period and come back when it returns; deleting the export removes
// everything it placed in m3 and nothing in the providers.
func TestMultiClusterServices(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	f.createDeployment(t, deployment(f.ns, "web", 3))
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
	if err := f.hub.Client.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	placement := placementOn("m1", "m2")
	placement.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{} // Divided, equal weights
	f.createPolicy(t, "web", deploymentSelector("web"), placement, func(p *policyv1alpha1.PropagationPolicy) {
		p.Spec.ResourceSelectors = append(p.Spec.ResourceSelectors, policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "Service", Name: "web"})
	})
	export := &mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: f.ns,
		Annotations: map[string]string{mcs.AnnotationConsumers: "m3"}}}
	if err := f.hub.Client.Create(ctx, export); err != nil {
		t.Fatal(err)
	}

	waitImported(t, f, 3, f.m1, f.m2)
	imp := &mcsv1alpha1.ServiceImport{}
	if err := f.m3.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "web"}, imp); err != nil {
		t.Fatal(err)
	}
	if imp.Spec.Type != mcsv1alpha1.ClusterSetIP || len(imp.Spec.Ports) != 1 || imp.Spec.Ports[0].Port != 80 {
		t.Fatalf("m3's ServiceImport: %+v", imp.Spec)
	}
	waitImportClusters(t, f, "m1", "m2")
	derived, err := f.m3.Kube.CoreV1().Services(f.ns).Get(ctx, mcs.DerivedName("web"), metav1.GetOptions{})
	if err != nil || derived.Spec.Selector != nil || len(derived.Spec.Ports) != 1 || derived.Spec.Ports[0].Port != 80 {
		t.Fatalf("m3's derived Service: %v %+v", err, derived)
	}
	testenv.Eventually(t, time.Minute, "status shows the consumer", func() error {
		if out := f.hub.Flotilla("status", "serviceexport/web", "-n", f.ns); !strings.Contains(out, "m3") || !strings.Contains(out, "consumer") {
			return fmt.Errorf("status does not show the consumer:\n%s", out)
		}
		return nil
	})

	scale(t, f, 5)
	waitImported(t, f, 5, f.m1, f.m2)

	// m2 stops providing when the Service leaves it, and provides again when it comes back.
	placeOn(t, f, "m1")
	waitImported(t, f, 5, f.m1)
	waitImportClusters(t, f, "m1")
	placeOn(t, f, "m1", "m2")
	waitImported(t, f, 5, f.m1, f.m2)

	// m2 exports the port as 8080: the older export wins and the export says so.
	override := &policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "web-port", Namespace: f.ns},
		Spec: policyv1alpha1.OverrideSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "Service", Name: "web"}},
			OverrideRules: []policyv1alpha1.RuleWithCluster{{
				TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m2"}},
				Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{
					Path: "/spec/ports/0/port", Operator: "replace", Value: &apiextensionsv1.JSON{Raw: []byte("8080")}}}},
			}},
		},
	}
	if err := f.hub.Client.Create(ctx, override); err != nil {
		t.Fatal(err)
	}
	waitConflict(t, f, metav1.ConditionTrue, string(mcsv1alpha1.ServiceExportReasonPortConflict))
	if err := f.hub.Client.Delete(ctx, override); err != nil {
		t.Fatal(err)
	}
	waitConflict(t, f, metav1.ConditionFalse, string(mcsv1alpha1.ServiceExportReasonNoConflicts))

	f.m2.Freeze()
	t.Cleanup(f.m2.Resume)
	waitImported(t, f, -1, f.m1)
	f.m2.Resume()
	waitImported(t, f, 5, f.m1, f.m2)

	if err := f.hub.Client.Delete(ctx, export); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "m3's imported objects are gone", func() error {
		if err := f.m3.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "web"}, &mcsv1alpha1.ServiceImport{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ServiceImport: %v", err)
		}
		if _, err := f.m3.Kube.CoreV1().Services(f.ns).Get(ctx, mcs.DerivedName("web"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("derived Service: %v", err)
		}
		if addresses, err := importedAddresses(ctx, f.m3, f.ns); err != nil || len(addresses) > 0 {
			return fmt.Errorf("imported addresses %v (%v)", addresses, err)
		}
		return nil
	})
	for _, m := range []*framework.Cluster{f.m1, f.m2} {
		if _, err := m.Kube.CoreV1().Services(f.ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
			t.Errorf("%s lost its Service: %v", m.Name, err)
		}
		if replicas, _, err := replicasIn(ctx, m, f.ns, "web"); err != nil || replicas <= 0 {
			t.Errorf("%s lost its Deployment: %d replicas (%v)", m.Name, replicas, err)
		}
	}
}

// placeOn changes the clusters the policy web places the Deployment and Service on.
func placeOn(t *testing.T, f *fleet, clusters ...string) {
	t.Helper()
	changePolicy(t, f.hub, f.ns, "web", func(p *policyv1alpha1.PropagationPolicy) { p.Spec.Placement.ClusterAffinity.ClusterNames = clusters })
}

func scale(t *testing.T, f *fleet, replicas int32) {
	t.Helper()
	changeDeployment(t, f.hub, f.ns, "web", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To(replicas) })
}

// waitImported waits until m3's imported EndpointSlices hold exactly the pod IPs of web in providers (want
// of them, -1: however many they run), each slice labelled with the cluster its addresses come from.
func waitImported(t *testing.T, f *fleet, want int, providers ...*framework.Cluster) {
	t.Helper()
	ctx := context.Background()
	testenv.Eventually(t, 2*time.Minute, "m3 imports the pod IPs of web", func() error {
		podIPs := map[string]string{} // IP → cluster
		for _, m := range providers {
			pods, err := m.Kube.CoreV1().Pods(f.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return err
			}
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil && p.Status.PodIP != "" {
					podIPs[p.Status.PodIP] = m.Name
				}
			}
		}
		if want >= 0 && len(podIPs) != want {
			return fmt.Errorf("providers run %d pods with IPs, want %d", len(podIPs), want)
		}
		imported, err := importedAddresses(ctx, f.m3, f.ns)
		if err != nil {
			return err
		}
		for ip, cluster := range podIPs {
			if imported[ip] != cluster {
				return fmt.Errorf("pod IP %s of %s imported as from %q (imported: %v)", ip, cluster, imported[ip], imported)
			}
		}
		for ip := range imported {
			if _, ok := podIPs[ip]; !ok {
				return fmt.Errorf("imported %s is not a pod IP of %v: %v", ip, podIPs, imported)
			}
		}
		return nil
	})
}

// importedAddresses returns the addresses of a member's imported slices of web, each with its source-cluster
// label.
func importedAddresses(ctx context.Context, m *framework.Cluster, namespace string) (map[string]string, error) {
	list, err := m.Kube.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{LabelSelector: mcs.LabelServiceName + "=web"})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, s := range list.Items {
		if s.Labels[discoveryv1.LabelManagedBy] != mcs.ManagedBy || s.Labels[discoveryv1.LabelServiceName] != mcs.DerivedName("web") {
			return nil, fmt.Errorf("imported slice %s labelled %v", s.Name, s.Labels)
		}
		for _, e := range s.Endpoints {
			for _, a := range e.Addresses {
				out[a] = s.Labels[mcs.LabelSourceCluster]
			}
		}
	}
	return out, nil
}

func waitConflict(t *testing.T, f *fleet, status metav1.ConditionStatus, reason string) {
	t.Helper()
	testenv.Eventually(t, time.Minute, "the export's Conflict condition is "+reason, func() error {
		e := &mcsv1alpha1.ServiceExport{}
		if err := f.hub.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "web"}, e); err != nil {
			return err
		}
		c := meta.FindStatusCondition(e.Status.Conditions, string(mcsv1alpha1.ServiceExportConditionConflict))
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("Conflict %+v", c)
		}
		return nil
	})
}

// waitImportClusters waits until m3's ServiceImport lists exactly the providers in its status.clusters.
func waitImportClusters(t *testing.T, f *fleet, want ...string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, fmt.Sprintf("m3's ServiceImport from %v", want), func() error {
		imp := &mcsv1alpha1.ServiceImport{}
		if err := f.m3.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "web"}, imp); err != nil {
			return err
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
