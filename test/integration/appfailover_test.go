package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// failoverPolicy places the ConfigMaps of namespace on two of the clusters labelled selector, and fails the
// application over after toleration seconds of unhealth, preserving the failed copy's status.checkpoint.
func failoverPolicy(namespace, name string, selector map[string]string, toleration int32, configMaps ...string) *policyv1alpha1.PropagationPolicy {
	p := placedPolicy(namespace, selector)
	p.Name = name
	p.Spec.ResourceSelectors = nil
	for _, cm := range configMaps {
		p.Spec.ResourceSelectors = append(p.Spec.ResourceSelectors, policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Name: cm})
	}
	p.Spec.Placement.SpreadConstraints = []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 1, MaxGroups: 2}}
	p.Spec.Failover = &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
		DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To(toleration)},
		PurgeMode:          policyv1alpha1.PurgeGracefully, GracePeriodSeconds: ptr.To(int32(600)),
		StatePreservation: &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{
			{AliasLabelName: "failover.example.io/checkpoint", JSONPath: "{.checkpoint}"}}},
	}}
	return p
}

// bindingWork reads the Work of the ConfigMap binding namespace/name in cluster.
func bindingWork(t *testing.T, namespace, name, cluster string) (*workv1alpha1.Work, error) {
	t.Helper()
	b, err := binding(context.Background(), configMapKind, namespace, name)
	if err != nil {
		return nil, err
	}
	w := &workv1alpha1.Work{}
	return w, env.Client.Get(context.Background(), client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: workv1alpha1.WorkName(b.Namespace, b.Name)}, w)
}

// workLabel reads a label of the template's manifest in the Work of the ConfigMap binding namespace/name in
// cluster.
func workLabel(t *testing.T, namespace, name, cluster, label string) (string, error) {
	t.Helper()
	w, err := bindingWork(t, namespace, name, cluster)
	if err != nil {
		return "", err
	}
	var m struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &m); err != nil {
		return "", err
	}
	return m.Metadata.Labels[label], nil
}

// reportHealth reports, as cluster's agent would, the ConfigMap's health and status in its Work.
func reportHealth(t *testing.T, namespace, name, cluster string, health workv1alpha1.ResourceHealth, status string) {
	t.Helper()
	var w *workv1alpha1.Work
	testenv.Eventually(t, hangGuard, "the Work in "+cluster, func() (err error) {
		w, err = bindingWork(t, namespace, name, cluster)
		return err
	})
	reportManifestStatus(t, w, health, status)
}

// releaseWork lets go of a deleted Work as an agent would once its objects are gone; the test clusters have
// no agent.
func releaseWork(t *testing.T, namespace, name, cluster string) {
	t.Helper()
	testenv.Eventually(t, hangGuard, "the Work in "+cluster+" deleted", func() error {
		w, err := bindingWork(t, namespace, name, cluster)
		if apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
		if w.DeletionTimestamp == nil {
			return fmt.Errorf("the Work in %s is not deleted", cluster)
		}
		return env.Client.Patch(context.Background(), w, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
	})
}

// waitTemplateEvent waits for an event on ConfigMap namespace/name whose note contains note.
func waitTemplateEvent(t *testing.T, namespace, name, note string) {
	t.Helper()
	testenv.Eventually(t, hangGuard, fmt.Sprintf("an event %q on %s/%s", note, namespace, name), func() error {
		events, err := env.Kube.EventsV1().Events(namespace).List(context.Background(), metav1.ListOptions{FieldSelector: "regarding.name=" + name})
		if err != nil {
			return err
		}
		var notes []string
		for _, e := range events.Items {
			if e.Regarding.Kind == "ConfigMap" && strings.Contains(e.Note, note) {
				return nil
			}
			notes = append(notes, e.Note)
		}
		return fmt.Errorf("events: %q", notes)
	})
}

// TestApplicationFailover: a ConfigMap on two of three clusters whose application stays Unhealthy on one of
// them past tolerationSeconds moves to the third; the cluster where it is healthy keeps its copy; the old
// copy stays until the replacement is healthy; the failed copy's checkpoint reaches the new cluster's Work
// (not the one that kept running) as a label; and the template's events say what happened.
func TestApplicationFailover(t *testing.T) {
	const ns = "appfailover"
	createNamespace(t, ns)
	selector := map[string]string{"appfailover": "yes"}
	a, b, c := "appfailover-a", "appfailover-b", "appfailover-c"
	for _, name := range []string{a, b, c} {
		placeableCluster(t, name, selector)
	}
	create(t, configMap(ns, "web", nil))
	create(t, failoverPolicy(ns, "web", selector, 2, "web"))
	waitPlaced(t, ns, "web", a, b)

	reportHealth(t, ns, "web", a, workv1alpha1.ResourceHealthy, `{}`)
	reportHealth(t, ns, "web", b, workv1alpha1.ResourceUnhealthy, `{"checkpoint":"ckpt-7"}`)
	moved := waitPlaced(t, ns, "web", a, c)
	if len(moved.Spec.GracefulEvictionTasks) != 1 || moved.Spec.GracefulEvictionTasks[0].FromCluster != b ||
		moved.Spec.GracefulEvictionTasks[0].Reason != scheduler.ReasonApplicationFailure {
		t.Fatalf("eviction tasks %+v, want one ApplicationFailure task for %s", moved.Spec.GracefulEvictionTasks, b)
	}
	if len(moved.Spec.FailoverRecords) != 1 || moved.Spec.FailoverRecords[0].FromCluster != b ||
		moved.Spec.FailoverRecords[0].PreservedLabelState["failover.example.io/checkpoint"] != "ckpt-7" {
		t.Fatalf("failover records %+v, want one for %s preserving the checkpoint", moved.Spec.FailoverRecords, b)
	}
	waitTemplateEvent(t, ns, "web", "evicting from "+b+": application unhealthy")

	checkpoint := func(cluster string) (string, error) {
		return workLabel(t, ns, "web", cluster, "failover.example.io/checkpoint")
	}
	testenv.Eventually(t, hangGuard, "the checkpoint label on the new cluster's copy", func() error {
		if got, err := checkpoint(c); err != nil || got != "ckpt-7" {
			return fmt.Errorf("label %q (%v), want ckpt-7", got, err)
		}
		return nil
	})
	if got, err := checkpoint(a); err != nil || got != "" {
		t.Errorf("the copy that kept running got the label %q (%v)", got, err)
	}
	// Graceful: the failed copy stays until its replacement is healthy.
	if _, err := bindingWork(t, ns, "web", b); err != nil {
		t.Fatalf("the failed cluster's Work before the replacement is healthy: %v", err)
	}

	reportHealth(t, ns, "web", c, workv1alpha1.ResourceHealthy, `{}`)
	releaseWork(t, ns, "web", b)
	waitTemplateEvent(t, ns, "web", "removing from "+b)
	waitTemplateEvent(t, ns, "web", "replacement healthy on "+a)
	after, err := binding(context.Background(), configMapKind, ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Spec.GracefulEvictionTasks) != 0 || len(after.Spec.FailoverRecords) != 1 {
		t.Errorf("after the replacement is healthy: tasks %+v records %+v, want no task and the record", after.Spec.GracefulEvictionTasks, after.Spec.FailoverRecords)
	}
}

// TestApplicationFailoverTimeIsPersisted: how long a cluster has been unhealthy is read from the binding's
// status, not from memory: a status that says Unhealthy since two hours ago (as a hub that restarted reads
// it) fails over at once with a toleration of an hour, while the same Unhealthy report without that
// history stays put.
func TestApplicationFailoverTimeIsPersisted(t *testing.T) {
	const ns = "appfailover-time"
	createNamespace(t, ns)
	selector := map[string]string{"appfailover-time": "yes"}
	a, b, c := "appfailover-time-a", "appfailover-time-b", "appfailover-time-c"
	for _, name := range []string{a, b, c} {
		placeableCluster(t, name, selector)
	}
	create(t, configMap(ns, "web", nil))
	create(t, failoverPolicy(ns, "web", selector, 3600, "web"))
	waitPlaced(t, ns, "web", a, b)
	reportHealth(t, ns, "web", a, workv1alpha1.ResourceHealthy, `{}`)
	reportHealth(t, ns, "web", b, workv1alpha1.ResourceUnhealthy, `{"checkpoint":"ckpt-9"}`)

	// unhealthySince waits until b's aggregated status item summarises status with checkpoint, and returns it.
	var current *workv1alpha1.ResourceBinding
	unhealthySince := func(checkpoint string) *metav1.Time {
		var since *metav1.Time
		testenv.Eventually(t, hangGuard, "the unhealthy cluster in the aggregated status", func() (err error) {
			if current, err = binding(context.Background(), configMapKind, ns, "web"); err != nil {
				return err
			}
			i := slices.IndexFunc(current.Status.AggregatedStatus, func(s workv1alpha1.AggregatedStatusItem) bool { return s.ClusterName == b })
			if i < 0 {
				return fmt.Errorf("aggregated status %+v", current.Status.AggregatedStatus)
			}
			item := current.Status.AggregatedStatus[i]
			if item.Health != workv1alpha1.ResourceUnhealthy || item.HealthTransitionTime == nil || item.Status == nil ||
				!strings.Contains(string(item.Status.Raw), checkpoint) {
				return fmt.Errorf("aggregated status of %s: %s since %v, %s", b, item.Health, item.HealthTransitionTime, item.Status)
			}
			since = item.HealthTransitionTime
			return nil
		})
		return since
	}
	first := unhealthySince("ckpt-9")
	// A later report of the same health keeps the time it turned unhealthy (times are kept to the second).
	for !time.Now().After(first.Add(time.Second)) {
		time.Sleep(100 * time.Millisecond)
	}
	reportHealth(t, ns, "web", b, workv1alpha1.ResourceUnhealthy, `{"checkpoint":"ckpt-10"}`)
	if later := unhealthySince("ckpt-10"); !later.Equal(first) {
		t.Fatalf("unhealthy since %v after a second report of the same health, want %v", later, first)
	}
	if got := settledBinding(t, ns, "web"); len(got.Spec.Clusters) != 2 || got.Spec.Clusters[1].Name != b {
		t.Fatalf("moved before the toleration of an hour ran out: %+v", got.Spec.Clusters)
	}

	// What a hub that restarted reads: the cluster has been unhealthy for two hours.
	items := current.Status.AggregatedStatus
	for i := range items {
		if items[i].ClusterName == b {
			items[i].HealthTransitionTime = &metav1.Time{Time: time.Now().Add(-2 * time.Hour)}
		}
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"aggregatedStatus": items}})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Status().Patch(context.Background(), current, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	waitPlaced(t, ns, "web", a, c)
	waitTemplateEvent(t, ns, "web", "evicting from "+b+": application unhealthy")
}

// TestApplicationFailoverWithNowhereToGo: when no other cluster can host the binding, the unhealthy copy
// stays, and the Scheduled condition and an event on the template say why.
func TestApplicationFailoverWithNowhereToGo(t *testing.T) {
	const ns = "appfailover-alone"
	createNamespace(t, ns)
	selector := map[string]string{"appfailover-alone": "yes"}
	const only = "appfailover-alone-a"
	placeableCluster(t, only, selector)
	create(t, configMap(ns, "web", nil))
	create(t, failoverPolicy(ns, "web", selector, 1, "web"))
	waitPlaced(t, ns, "web", only)
	reportHealth(t, ns, "web", only, workv1alpha1.ResourceUnhealthy, `{"checkpoint":"ckpt-1"}`)
	waitTemplateEvent(t, ns, "web", "no other cluster can host it, so its copy stays")
	// The event comes before the status of the same pass: wait for the condition too.
	testenv.Eventually(t, hangGuard, "Scheduled says the failover waits", func() error {
		b := waitPlaced(t, ns, "web", only)
		if c := meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionScheduled); c == nil || !strings.Contains(c.Message, "no other cluster can host it") {
			return fmt.Errorf("Scheduled %+v", c)
		}
		return nil
	})
	b := waitPlaced(t, ns, "web", only)
	if len(b.Spec.GracefulEvictionTasks) != 0 || len(b.Spec.FailoverRecords) != 0 {
		t.Errorf("nothing to fail over to, yet tasks %+v records %+v", b.Spec.GracefulEvictionTasks, b.Spec.FailoverRecords)
	}
}

// TestApplicationFailoverPurgeDirectly: with the application's purge mode Directly, the failed cluster gets
// no eviction task and its Work goes as the binding moves (the policy's own purge mode, not the default).
func TestApplicationFailoverPurgeDirectly(t *testing.T) {
	const ns = "appfailover-directly"
	createNamespace(t, ns)
	selector := map[string]string{"appfailover-directly": "yes"}
	a, b, c := "appfailover-directly-a", "appfailover-directly-b", "appfailover-directly-c"
	for _, name := range []string{a, b, c} {
		placeableCluster(t, name, selector)
	}
	create(t, configMap(ns, "web", nil))
	p := failoverPolicy(ns, "web", selector, 1, "web")
	p.Spec.Failover.Application.PurgeMode, p.Spec.Failover.Application.GracePeriodSeconds = policyv1alpha1.PurgeDirectly, nil
	create(t, p)
	waitPlaced(t, ns, "web", a, b)
	reportHealth(t, ns, "web", a, workv1alpha1.ResourceHealthy, `{}`)
	reportHealth(t, ns, "web", b, workv1alpha1.ResourceUnhealthy, `{"checkpoint":"ckpt-3"}`)
	moved := waitPlaced(t, ns, "web", a, c)
	if len(moved.Spec.GracefulEvictionTasks) != 0 {
		t.Fatalf("eviction tasks %+v, want none with purge mode Directly", moved.Spec.GracefulEvictionTasks)
	}
	releaseWork(t, ns, "web", b)
}

// TestApplicationFailoverGracePeriod: when the replacement does not become healthy within the application's
// gracePeriodSeconds, the old copy goes anyway, and the template's event says the grace period passed.
func TestApplicationFailoverGracePeriod(t *testing.T) {
	const ns = "appfailover-grace"
	createNamespace(t, ns)
	selector := map[string]string{"appfailover-grace": "yes"}
	a, b, c := "appfailover-grace-a", "appfailover-grace-b", "appfailover-grace-c"
	for _, name := range []string{a, b, c} {
		placeableCluster(t, name, selector)
	}
	create(t, configMap(ns, "web", nil))
	p := failoverPolicy(ns, "web", selector, 1, "web")
	p.Spec.Failover.Application.GracePeriodSeconds = ptr.To(int32(1))
	create(t, p)
	waitPlaced(t, ns, "web", a, b)
	reportHealth(t, ns, "web", a, workv1alpha1.ResourceHealthy, `{}`)
	reportHealth(t, ns, "web", b, workv1alpha1.ResourceUnhealthy, `{"checkpoint":"ckpt-5"}`)
	waitPlaced(t, ns, "web", a, c)
	releaseWork(t, ns, "web", b) // c never reports: only the grace period ends the eviction
	waitTemplateEvent(t, ns, "web", "grace period passed, removing from "+b)
}

// TestClusterFailoverPreservesState: a NoExecute taint the policy does not tolerate moves the binding off a
// cluster; the policy's cluster statePreservation takes the value from that cluster's last status, and the
// new cluster's Work carries it as a label while the one that kept running does not. The template's event
// names the cause.
func TestClusterFailoverPreservesState(t *testing.T) {
	const ns = "clusterfailover-state"
	createNamespace(t, ns)
	selector := map[string]string{"clusterfailover-state": "yes"}
	a, b, c := "clusterfailover-state-a", "clusterfailover-state-b", "clusterfailover-state-c"
	for _, name := range []string{a, b, c} {
		placeableCluster(t, name, selector)
	}
	create(t, configMap(ns, "web", nil))
	p := failoverPolicy(ns, "web", selector, 3600, "web")
	// The test clusters have no agent: the health monitor's taints are tolerated, and every NoSchedule one;
	// the maintenance taint below is not.
	p.Spec.Placement.ClusterTolerations = []corev1.Toleration{
		{Key: clusterv1alpha1.TaintClusterUnreachable, Operator: corev1.TolerationOpExists},
		{Key: clusterv1alpha1.TaintClusterNotReady, Operator: corev1.TolerationOpExists},
		{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	p.Spec.Failover.Cluster = &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeGracefully,
		StatePreservation: &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{
			{AliasLabelName: "failover.example.io/phase", JSONPath: "{.phase}"}}}}
	create(t, p)
	waitPlaced(t, ns, "web", a, b)
	reportHealth(t, ns, "web", a, workv1alpha1.ResourceHealthy, `{}`)
	reportHealth(t, ns, "web", b, workv1alpha1.ResourceHealthy, `{"phase":"draining-42"}`)

	cluster := &clusterv1alpha1.Cluster{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: b}, cluster); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cluster.DeepCopy())
	cluster.Spec.Taints = append(cluster.Spec.Taints, corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoExecute, TimeAdded: ptr.To(metav1.Now())})
	if err := env.Client.Patch(context.Background(), cluster, patch); err != nil {
		t.Fatal(err)
	}
	moved := waitPlaced(t, ns, "web", a, c)
	if len(moved.Spec.FailoverRecords) != 1 || moved.Spec.FailoverRecords[0].Reason != scheduler.ReasonTaintUntolerated ||
		moved.Spec.FailoverRecords[0].PreservedLabelState["failover.example.io/phase"] != "draining-42" {
		t.Fatalf("failover records %+v, want one TaintUntolerated record preserving the phase", moved.Spec.FailoverRecords)
	}
	testenv.Eventually(t, hangGuard, "the phase label on the new cluster's copy only", func() error {
		for cluster, want := range map[string]string{c: "draining-42", a: ""} {
			if got, err := workLabel(t, ns, "web", cluster, "failover.example.io/phase"); err != nil || got != want {
				return fmt.Errorf("%s: label %q (%v), want %q", cluster, got, err, want)
			}
		}
		return nil
	})
	waitTemplateEvent(t, ns, "web", "evicting from "+b+": the cluster has the untolerated taint maintenance:NoExecute")
}
