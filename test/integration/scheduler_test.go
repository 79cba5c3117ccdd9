package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// placeableCluster registers an agentless Pull cluster with labels and the status of a member that serves
// ConfigMaps. It is deleted after the test, after everything placed on it (cleanups run last first).
func placeableCluster(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	cluster := createPullCluster(t, name)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cluster) })
	patch := client.MergeFrom(cluster.DeepCopy())
	cluster.Labels = labels
	if err := env.Client.Patch(ctx, cluster, patch); err != nil {
		t.Fatal(err)
	}
	updateClusterStatus(t, name, func(s *clusterv1alpha1.ClusterStatus) {
		s.KubernetesVersion = "v1.37.1"
		s.APIEnablements = []clusterv1alpha1.APIEnablement{{GroupVersion: "v1", Resources: []clusterv1alpha1.APIResource{{Name: "configmaps", Kind: "ConfigMap"}}}}
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: clusterv1alpha1.ClusterConditionAPIsComplete, Status: metav1.ConditionTrue,
			Reason: "Complete", Message: "every API listed"})
		s.NodeSummary = &clusterv1alpha1.NodeSummary{TotalNum: 3, ReadyNum: 3}
		s.ResourceSummary = &clusterv1alpha1.ResourceSummary{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}
		s.Health = &clusterv1alpha1.HealthEndpoints{Livez: "ok", Readyz: "ok"}
	})
}

// updateClusterStatus edits a Cluster's status as its reporter would (the health monitor writes it too).
func updateClusterStatus(t *testing.T, name string, edit func(s *clusterv1alpha1.ClusterStatus)) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c := &clusterv1alpha1.Cluster{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, c); err != nil {
			return err
		}
		edit(&c.Status)
		return env.Client.Status().Update(context.Background(), c)
	}); err != nil {
		t.Fatal(err)
	}
}

// labelCluster replaces a Cluster's labels.
func labelCluster(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	c := &clusterv1alpha1.Cluster{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, c); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(c.DeepCopy())
	c.Labels = labels
	if err := env.Client.Patch(context.Background(), c, patch); err != nil {
		t.Fatal(err)
	}
}

// placedPolicy places the ConfigMaps of namespace on the clusters labelled selector, whatever their taints
// (the test clusters have no agent, and the health monitor taints them once their grace period is over).
func placedPolicy(namespace string, selector map[string]string) *policyv1alpha1.PropagationPolicy {
	return &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "placed"},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap"}},
			Placement: policyv1alpha1.Placement{
				ClusterAffinity:    &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: selector}},
				ClusterTolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			},
		}}
}

// waitPlaced waits until the binding of ConfigMap namespace/name is placed on exactly clusters, and its
// Scheduled condition and observed generation say so.
func waitPlaced(t *testing.T, namespace, name string, clusters ...string) *workv1alpha1.ResourceBinding {
	t.Helper()
	var b *workv1alpha1.ResourceBinding
	testenv.Eventually(t, hangGuard, fmt.Sprintf("%s/%s placed on %v", namespace, name, clusters), func() error {
		var err error
		if b, err = binding(context.Background(), configMapKind, namespace, name); err != nil {
			return err
		}
		var got []string
		for _, c := range b.Spec.Clusters {
			got = append(got, c.Name)
		}
		if !slices.Equal(got, clusters) {
			return fmt.Errorf("placed on %v", got)
		}
		if !meta.IsStatusConditionTrue(b.Status.Conditions, workv1alpha1.ConditionScheduled) || b.Status.SchedulerObservedGeneration != b.Generation {
			return fmt.Errorf("scheduled %v at generation %d of %d", b.Status.Conditions, b.Status.SchedulerObservedGeneration, b.Generation)
		}
		return nil
	})
	return b
}

// settledBinding waits until the binding of ConfigMap namespace/name stops changing (its Works are written
// and their status aggregated) and returns it.
func settledBinding(t *testing.T, namespace, name string) *workv1alpha1.ResourceBinding {
	t.Helper()
	var last *workv1alpha1.ResourceBinding
	stableSince := time.Now()
	testenv.Eventually(t, hangGuard, "the binding settles", func() error {
		b, err := binding(context.Background(), configMapKind, namespace, name)
		if err != nil {
			return err
		}
		if last == nil || last.ResourceVersion != b.ResourceVersion {
			last, stableSince = b, time.Now()
		}
		// Longer than the 5 s the status controller waits, on a new binding whose Works report nothing, before
		// it writes a first status saying so.
		if time.Since(stableSince) < 6*time.Second {
			return fmt.Errorf("written at resourceVersion %s less than 6s ago", b.ResourceVersion)
		}
		return nil
	})
	return last
}

// otherClusterVersions maps every Cluster but the one named to its resourceVersion.
func otherClusterVersions(t *testing.T, but string) map[string]string {
	t.Helper()
	clusters := &clusterv1alpha1.ClusterList{}
	if err := env.Client.List(context.Background(), clusters); err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{}
	for _, c := range clusters.Items {
		if c.Name != but {
			versions[c.Name] = c.ResourceVersion
		}
	}
	return versions
}

// TestClusterHeartbeatReschedulesNothing: what a member's reporter refreshes all the time (versions, node
// counts, probe results, the time a condition was last checked) neither wakes the scheduler nor writes any
// binding. Every Cluster change used to reschedule every binding.
func TestClusterHeartbeatReschedulesNothing(t *testing.T) {
	createNamespace(t, "sched-heartbeat")
	placeableCluster(t, "sched-heartbeat", map[string]string{"sched-heartbeat": "yes"})
	create(t, configMap("sched-heartbeat", "web", nil))
	create(t, placedPolicy("sched-heartbeat", map[string]string{"sched-heartbeat": "yes"}))
	waitPlaced(t, "sched-heartbeat", "web", "sched-heartbeat")
	before := settledBinding(t, "sched-heartbeat", "web")

	// Clusters other tests left behind still change (the health monitor taints those whose agents are gone),
	// and such a change rightly wakes the scheduler for every binding: a window in which another cluster
	// changed says nothing and is tried again. A heartbeat that wakes the scheduler fails every window.
	heartbeat, quiet := 0, false
	var woken []float64
	for try := 0; try < 10 && !quiet; try++ {
		others := otherClusterVersions(t, "sched-heartbeat")
		since := reconciles(t, "scheduler", "cluster-scheduler")
		for range 3 {
			heartbeat++
			updateClusterStatus(t, "sched-heartbeat", func(s *clusterv1alpha1.ClusterStatus) {
				s.KubernetesVersion = fmt.Sprintf("v1.37.%d", heartbeat+1)
				s.NodeSummary.ReadyNum = int32(heartbeat % 3)
				s.Health.Readyz = fmt.Sprintf("ok (probe %d)", heartbeat)
				s.AgentVersion = fmt.Sprintf("v0.1.%d", heartbeat)
			})
		}
		time.Sleep(2 * time.Second) // nothing to wait for: the assertion is that nothing happens
		if !maps.Equal(others, otherClusterVersions(t, "sched-heartbeat")) {
			continue
		}
		n := reconciles(t, "scheduler", "cluster-scheduler") - since
		woken, quiet = append(woken, n), n == 0
	}
	switch {
	case len(woken) == 0:
		t.Errorf("other clusters changed in each of 10 windows: no window could show what heartbeats do")
	case !quiet:
		t.Errorf("after three heartbeats of one cluster the scheduler ran %v reconciles, in every window in which no other cluster changed", woken)
	}
	after, err := binding(context.Background(), configMapKind, "sched-heartbeat", "web")
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("heartbeats rewrote the binding: resourceVersion %s → %s\nbefore: %+v\nafter: %+v", before.ResourceVersion,
			after.ResourceVersion, before.Status, after.Status)
	}
}

// TestLabelChangeMovesThePlacement: a change of the labels a placement selects by moves the binding.
func TestLabelChangeMovesThePlacement(t *testing.T) {
	createNamespace(t, "sched-labels")
	placeableCluster(t, "sched-labels-a", map[string]string{"sched-labels": "blue"})
	placeableCluster(t, "sched-labels-b", map[string]string{"sched-labels": "green"})
	create(t, configMap("sched-labels", "web", nil))
	create(t, placedPolicy("sched-labels", map[string]string{"sched-labels": "blue"}))
	waitPlaced(t, "sched-labels", "web", "sched-labels-a")

	labelCluster(t, "sched-labels-a", map[string]string{"sched-labels": "green"})
	labelCluster(t, "sched-labels-b", map[string]string{"sched-labels": "blue"})
	waitPlaced(t, "sched-labels", "web", "sched-labels-b")
}

// fieldOwners lists, for each managedFields entry of obj that owns the field at path (keys of fieldsV1 such
// as "f:spec", "f:clusters"), its manager and operation.
func fieldOwners(obj client.Object, subresource string, path ...string) []string {
	var owners []string
	for _, e := range obj.GetManagedFields() {
		if e.Subresource != subresource || e.FieldsV1 == nil {
			continue
		}
		fields := map[string]any{}
		if err := json.Unmarshal(e.FieldsV1.Raw, &fields); err != nil {
			return []string{"unreadable: " + err.Error()}
		}
		found := true
		for _, key := range path {
			next, ok := fields[key].(map[string]any)
			if !ok {
				found = false
				break
			}
			fields = next
		}
		if found {
			owners = append(owners, e.Manager+"/"+string(e.Operation))
		}
	}
	slices.Sort(owners)
	return owners
}

// bindingWriters checks that each part of a binding has one writer, by server-side apply: the detector its
// policy-derived spec, the scheduler the placement and the Scheduled condition; and that nothing writes its
// spec, nor a Flotilla controller any of it, by a full Update (which copies the other writers' fields back).
func bindingWriters(b client.Object, placed bool) error {
	detector, scheduler := workv1alpha1.ControllerFieldManager("detector")+"/Apply", workv1alpha1.ControllerFieldManager("scheduler")+"/Apply"
	want := map[string][]string{
		"spec.resource":                {detector},
		"spec.placement":               {detector},
		"status.conditions[Scheduled]": {scheduler},
	}
	got := map[string][]string{
		"spec.resource":                fieldOwners(b, "", "f:spec", "f:resource"),
		"spec.placement":               fieldOwners(b, "", "f:spec", "f:placement"),
		"status.conditions[Scheduled]": fieldOwners(b, "status", "f:status", "f:conditions", `k:{"type":"Scheduled"}`),
	}
	if placed {
		want["spec.clusters"] = []string{scheduler}
		got["spec.clusters"] = fieldOwners(b, "", "f:spec", "f:clusters")
	}
	var problems []string
	for field, owners := range want {
		if !slices.Equal(got[field], owners) {
			problems = append(problems, fmt.Sprintf("%s written by %v, want %v", field, got[field], owners))
		}
	}
	for _, e := range b.GetManagedFields() {
		entry := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{e}}}
		if e.Operation == metav1.ManagedFieldsOperationUpdate &&
			(strings.HasPrefix(e.Manager, workv1alpha1.FieldManager) || len(fieldOwners(entry, e.Subresource, "f:spec")) > 0) {
			problems = append(problems, fmt.Sprintf("%s wrote it by a full Update (subresource %q)", e.Manager, e.Subresource))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("binding %s/%s: %s", b.GetNamespace(), b.GetName(), strings.Join(problems, "; "))
	}
	return nil
}

// TestBindingFieldsHaveOneWriterEach: a placed binding's managedFields show the detector as the writer of its
// policy-derived spec and the scheduler as the writer of its placement and Scheduled condition.
func TestBindingFieldsHaveOneWriterEach(t *testing.T) {
	createNamespace(t, "sched-owners")
	placeableCluster(t, "sched-owners", map[string]string{"sched-owners": "yes"})
	create(t, configMap("sched-owners", "web", nil))
	create(t, placedPolicy("sched-owners", map[string]string{"sched-owners": "yes"}))
	waitPlaced(t, "sched-owners", "web", "sched-owners")
	// The binding controller's status write may still be on its way: it is no writer of these fields.
	testenv.Eventually(t, hangGuard, "one writer per binding field", func() error {
		b, err := binding(context.Background(), configMapKind, "sched-owners", "web")
		if err != nil {
			return err
		}
		return bindingWriters(b, true)
	})
}
