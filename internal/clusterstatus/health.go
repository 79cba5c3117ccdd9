package clusterstatus

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Reasons of the Ready condition.
const (
	ReasonReady          = "ClusterReady"
	ReasonNotReady       = "ClusterNotReady"
	ReasonUnreachable    = "ClusterUnreachable"
	ReasonNoHeartbeatYet = "WaitingForFirstHeartbeat"
)

// HealthMonitor sets each Cluster's Ready condition and health taints from its Lease and its readyz result:
// no change of the Lease seen for GracePeriod → Ready=Unknown and cluster.flotilla.io/unreachable:NoSchedule;
// readyz failing → Ready=False and cluster.flotilla.io/not-ready:NoSchedule; otherwise Ready=True and
// neither taint.
type HealthMonitor struct {
	Client      client.Client
	Recorder    events.EventRecorder
	GracePeriod time.Duration
	now         func() time.Time
	heartbeats  heartbeats
}

// SetupHealthMonitor registers the monitor with the manager.
func SetupHealthMonitor(mgr ctrl.Manager, grace time.Duration) error {
	m := &HealthMonitor{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("flotilla-cluster-health"), GracePeriod: grace, now: time.Now,
		heartbeats: heartbeats{seen: map[string]heartbeat{}}}
	return ctrl.NewControllerManagedBy(mgr).Named("cluster-health").
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(healthInputsChanged)).
		Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(leaseToCluster)).
		Complete(m)
}

// leaseToCluster maps a cluster's Lease (named after it, in its namespace) to the Cluster.
func leaseToCluster(_ context.Context, o client.Object) []reconcile.Request {
	if o.GetNamespace() != clusterv1alpha1.ClusterNamespace(o.GetName()) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.GetName()}}}
}

// Reconcile evaluates one cluster.
func (m *HealthMonitor) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster := &clusterv1alpha1.Cluster{}
	if err := m.Client.Get(ctx, req.NamespacedName, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			m.heartbeats.forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	lease := &coordinationv1.Lease{}
	err := m.Client.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster.Name), Name: cluster.Name}, lease)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	version := "" // no Lease
	if err == nil {
		version = lease.ResourceVersion
	}
	hb := m.heartbeats.observe(cluster.Name, version, m.now())
	var renewed *time.Time
	if err == nil && lease.Spec.RenewTime != nil {
		if !hb.changed && meta.IsStatusConditionPresentAndEqual(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady, metav1.ConditionUnknown) {
			// This monitor has not seen the Lease change since it started, and the cluster was already judged
			// unreachable: a Lease that merely exists is no heartbeat. The next renewal wakes us.
			return ctrl.Result{}, nil
		}
		renewed = &hb.observed
	}
	ready, taint := Evaluate(cluster, renewed, m.now(), m.GracePeriod)

	if err := m.setHealthTaint(ctx, cluster, taint); err != nil {
		return ctrl.Result{}, err
	}
	if err := m.setReady(ctx, cluster, ready); err != nil {
		return ctrl.Result{}, err
	}
	// Look again when the Lease would expire, so a silent cluster turns Unknown on time.
	if renewed != nil && ready.Status != metav1.ConditionUnknown {
		return ctrl.Result{RequeueAfter: renewed.Add(m.GracePeriod).Sub(m.now()) + time.Second}, nil
	}
	return ctrl.Result{}, nil
}

// setHealthTaint gives the cluster exactly the health taint it must carry (none when taint is empty). The
// taint list is one field that people (`flotilla taint`) write too: the patch carries the resourceVersion it
// was computed from, so a taint added meanwhile is never lost: the patch fails, and the next reconcile
// starts from the new list.
func (m *HealthMonitor) setHealthTaint(ctx context.Context, cluster *clusterv1alpha1.Cluster, taint string) error {
	taints := withHealthTaint(cluster.Spec.Taints, taint, m.now())
	if slices.EqualFunc(taints, cluster.Spec.Taints, sameTaint) {
		return nil
	}
	patch := client.MergeFromWithOptions(cluster.DeepCopy(), client.MergeFromWithOptimisticLock{})
	cluster.Spec.Taints = taints
	return m.Client.Patch(ctx, cluster, patch, client.FieldOwner(HealthFieldManager))
}

// setReady applies the Ready condition, the one status field the monitor owns, when it changed, and records
// an event when its status did.
func (m *HealthMonitor) setReady(ctx context.Context, cluster *clusterv1alpha1.Cluster, ready metav1.Condition) error {
	previous := metav1.ConditionStatus("")
	if c := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady); c != nil {
		previous = c.Status
	}
	ready.ObservedGeneration = cluster.Generation
	conditions, changed := withCondition(cluster.Status.Conditions, ready)
	if !changed {
		return nil
	}
	if err := applyStatus(ctx, m.Client, cluster.Name, HealthFieldManager, &clusterv1alpha1.ClusterStatus{Conditions: conditions}); err != nil {
		return err
	}
	if previous != ready.Status {
		eventType := corev1.EventTypeNormal
		if ready.Status != metav1.ConditionTrue {
			eventType = corev1.EventTypeWarning
		}
		m.Recorder.Eventf(cluster, nil, eventType, ready.Reason, "HealthChanged", "Ready=%s: %s", ready.Status, ready.Message)
	}
	return nil
}

// healthInputsChanged passes the Cluster changes the monitor's verdict depends on: the spec (its taints and
// generation) and the health endpoints the reporter wrote. The monitor's own Ready condition and the
// reporter's other facts do not wake it; Lease renewals do, through their own watch.
var healthInputsChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	old, okOld := e.ObjectOld.(*clusterv1alpha1.Cluster)
	cur, okNew := e.ObjectNew.(*clusterv1alpha1.Cluster)
	return !okOld || !okNew || old.Generation != cur.Generation || !equality.Semantic.DeepEqual(old.Status.Health, cur.Status.Health)
}}

// heartbeats remembers, per cluster, the version of its Lease the hub last saw and when it first saw it.
// Liveness is judged from that time, on the hub's clock: spec.renewTime comes from the agent's clock, and
// one that is minutes off would make a live cluster look dead or a dead one look alive.
type heartbeats struct {
	mu   sync.Mutex
	seen map[string]heartbeat
}

type heartbeat struct {
	// version is the resourceVersion of the Lease (empty: no Lease); any write to it is a renewal.
	version string
	// observed is when the hub first saw this version (or, before any change, the Lease at all).
	observed time.Time
	// changed says the hub has seen the Lease change since it started watching.
	changed bool
}

// observe records the Lease version of a cluster seen at now and returns what the hub knows of its heartbeat.
func (h *heartbeats) observe(cluster, version string, now time.Time) heartbeat {
	h.mu.Lock()
	defer h.mu.Unlock()
	hb, known := h.seen[cluster]
	switch {
	case !known:
		hb = heartbeat{version: version, observed: now}
	case hb.version != version:
		hb = heartbeat{version: version, observed: now, changed: true}
	}
	h.seen[cluster] = hb
	return hb
}

func (h *heartbeats) forget(cluster string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.seen, cluster)
}

// Evaluate decides a cluster's Ready condition and which health taint it must carry (empty for none), from
// when the hub last saw its Lease renewed (nil: never).
func Evaluate(cluster *clusterv1alpha1.Cluster, renewed *time.Time, now time.Time, grace time.Duration) (metav1.Condition, string) {
	c := metav1.Condition{Type: clusterv1alpha1.ClusterConditionReady}
	switch {
	case renewed == nil:
		c.Status, c.Reason = metav1.ConditionUnknown, ReasonNoHeartbeatYet
		c.Message = "the cluster has not sent a heartbeat yet"
		return c, clusterv1alpha1.TaintClusterUnreachable
	case now.Sub(*renewed) > grace:
		c.Status, c.Reason = metav1.ConditionUnknown, ReasonUnreachable
		c.Message = fmt.Sprintf("no heartbeat for %s (grace period %s)", now.Sub(*renewed).Round(time.Second), grace)
		return c, clusterv1alpha1.TaintClusterUnreachable
	case cluster.Status.Health == nil || cluster.Status.Health.Readyz != "ok":
		c.Status, c.Reason = metav1.ConditionFalse, ReasonNotReady
		c.Message = "the member's /readyz fails"
		if cluster.Status.Health != nil {
			c.Message += ": " + cluster.Status.Health.Readyz
		}
		return c, clusterv1alpha1.TaintClusterNotReady
	}
	c.Status, c.Reason, c.Message = metav1.ConditionTrue, ReasonReady, "the member is healthy and sends heartbeats"
	return c, ""
}

// withHealthTaint returns taints with exactly the wanted NoSchedule health taint (or none) of the hub's two,
// keeping every other taint (a user's NoExecute taint on the same key included) and the time an existing
// health taint was added.
func withHealthTaint(taints []corev1.Taint, want string, now time.Time) []corev1.Taint {
	out := make([]corev1.Taint, 0, len(taints)+1)
	for _, t := range taints {
		isHealth := (t.Key == clusterv1alpha1.TaintClusterNotReady || t.Key == clusterv1alpha1.TaintClusterUnreachable) &&
			t.Effect == corev1.TaintEffectNoSchedule
		if !isHealth || t.Key == want {
			out = append(out, t)
		}
	}
	isWanted := func(t corev1.Taint) bool { return t.Key == want && t.Effect == corev1.TaintEffectNoSchedule }
	if want != "" && !slices.ContainsFunc(out, isWanted) {
		out = append(out, corev1.Taint{Key: want, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &metav1.Time{Time: now}})
	}
	return out
}

func sameTaint(a, b corev1.Taint) bool {
	return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect
}
