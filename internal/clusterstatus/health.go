package clusterstatus

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/metrics"
	"github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/shard"
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
// neither taint. For failover, an unhealthy cluster also gets the same key with effect NoExecute, unless the
// mass-failure guard, the hub's own start or the rate limit holds it back (the Failover condition says which).
type HealthMonitor struct {
	Client      client.Client
	Recorder    events.EventRecorder
	GracePeriod time.Duration
	Failover    FailoverOptions
	// Shard says which clusters this hub replica watches over (nil: all of them); with sharding, the fleet
	// view of the mass-failure guard and the failover rate are this replica's share of the fleet.
	Shard      *shard.Group
	now        func() time.Time
	heartbeats heartbeats
	limiter    *rate.Limiter
	// started is when this monitor first reconciled: when its hub started leading.
	started   time.Time
	startOnce sync.Once
}

// SetupHealthMonitor registers the monitor with the manager. With a shard group it runs on every hub replica
// and watches over the clusters its replica owns.
func SetupHealthMonitor(mgr ctrl.Manager, grace time.Duration, failover FailoverOptions, group *shard.Group) error {
	m := NewHealthMonitor(mgr.GetClient(), mgr.GetEventRecorder("flotilla-cluster-health"), grace, failover, time.Now)
	m.Shard = group
	owned := group.Filter(func(o client.Object) (string, bool) { return o.GetName(), true })
	ownedLease := group.Filter(func(o client.Object) (string, bool) {
		return o.GetName(), len(leaseToCluster(context.Background(), o)) > 0
	})
	return ctrl.NewControllerManagedBy(mgr).Named("cluster-health").WithOptions(group.Options(controller.Options{})).
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(healthInputsChanged, owned)).
		Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(leaseToCluster), builder.WithPredicates(ownedLease)).
		WatchesRawSource(group.Requeue(shard.OneCluster(func(ctx context.Context) ([]reconcile.Request, error) {
			clusters := &clusterv1alpha1.ClusterList{}
			if err := mgr.GetClient().List(ctx, clusters); err != nil {
				return nil, err
			}
			requests := make([]reconcile.Request, len(clusters.Items))
			for i, c := range clusters.Items {
				requests[i].Name = c.Name
			}
			return requests, nil
		}, func(r reconcile.Request) (string, bool) { return r.Name, true }))).
		Complete(m)
}

// NewHealthMonitor returns a monitor that reads the time from now.
func NewHealthMonitor(c client.Client, recorder events.EventRecorder, grace time.Duration, failover FailoverOptions, now func() time.Time) *HealthMonitor {
	return &HealthMonitor{Client: c, Recorder: recorder, GracePeriod: grace, Failover: failover, now: now,
		heartbeats: heartbeats{seen: map[string]heartbeat{}}, limiter: rate.NewLimiter(rate.Limit(failover.PerMinute/60), 1)}
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
	m.startOnce.Do(func() { m.started = m.now() })
	if !m.Shard.Owns(req.Name) {
		// Another hub replica watches over it now (or will, once the shard group settles).
		m.heartbeats.forget(req.Name)
		metrics.ForgetHeartbeat(req.Name)
		return ctrl.Result{}, nil
	}
	cluster := &clusterv1alpha1.Cluster{}
	if err := m.Client.Get(ctx, req.NamespacedName, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			m.heartbeats.forget(req.Name)
			metrics.ForgetHeartbeat(req.Name)
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
	now := m.now()
	hb := m.heartbeats.observe(cluster.Name, version, now)
	if err == nil {
		if err := m.setLeaseDuration(ctx, lease); err != nil {
			return ctrl.Result{}, err
		}
	}
	var renewed *time.Time
	var ready metav1.Condition
	var taint string
	if previous := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady); err == nil && lease.Spec.RenewTime != nil &&
		!hb.changed && previous != nil && previous.Status == metav1.ConditionUnknown {
		// This monitor has not seen the Lease change since it started, and the cluster was already judged
		// unreachable: a Lease that merely exists is no heartbeat. The verdict stays until the next renewal.
		ready, taint = *previous, clusterv1alpha1.TaintClusterUnreachable
		m.heartbeats.lose(cluster.Name)
	} else {
		if err == nil && lease.Spec.RenewTime != nil {
			renewed = &hb.observed
			metrics.ObserveHeartbeat(cluster.Name, hb.observed)
		}
		ready, taint = Evaluate(cluster, renewed, now, m.GracePeriod)
	}

	want, due := noExecuteFor(taint, renewed, now, m.GracePeriod)
	// The fleet's view is a pass over every cluster's heartbeat: only a cluster due for a NoExecute taint
	// needs it, not every renewal of a healthy one (at 5,000 clusters that made the fleet's cost at rest grow
	// with its square).
	var fleet fleetView
	if want != "" {
		fleet = m.fleet(now)
	}
	failover := decideFailover(want, m.healthNoExecute(cluster), fleet, m.Failover, m.take)
	if failover.condition != nil && failover.condition.Reason == ReasonMassFailureGuard {
		ctrl.LoggerFrom(ctx).Info("not failing over an unreachable cluster", "cluster", cluster.Name, "why", failover.condition.Message)
	}
	if err := m.setHealthTaints(ctx, cluster, taint, failover.taint); err != nil {
		return ctrl.Result{}, err
	}
	if err := m.setConditions(ctx, cluster, ready, failover.condition); err != nil {
		return ctrl.Result{}, err
	}
	// Look again when the Lease would expire, so a silent cluster turns Unknown on time; when its NoExecute
	// taint is due; and now and then while it is unhealthy, for the guard.
	var retry time.Duration
	for _, d := range []time.Duration{due, failover.retry} {
		if d > 0 && (retry == 0 || d < retry) {
			retry = d
		}
	}
	if renewed != nil && ready.Status != metav1.ConditionUnknown {
		if d := renewed.Add(m.GracePeriod).Sub(now) + time.Second; retry == 0 || d < retry {
			retry = d
		}
	}
	return ctrl.Result{RequeueAfter: retry}, nil
}

// setLeaseDuration sets a cluster's Lease's duration to the grace period, so that its reporter renews it
// every quarter of that (RenewalPeriod), and records the version this write makes as no heartbeat.
func (m *HealthMonitor) setLeaseDuration(ctx context.Context, lease *coordinationv1.Lease) error {
	want := int32(m.GracePeriod / time.Second)
	if ptr.Deref(lease.Spec.LeaseDurationSeconds, 0) == want {
		return nil
	}
	before := lease.ResourceVersion
	patch := client.MergeFrom(lease.DeepCopy())
	lease.Spec.LeaseDurationSeconds = &want
	if err := m.Client.Patch(ctx, lease, patch, client.FieldOwner(HealthFieldManager)); err != nil {
		return err
	}
	m.heartbeats.wrote(lease.Name, before, lease.ResourceVersion)
	return nil
}

// fleet says how many clusters are unreachable, from the heartbeats the monitor saw, and how long the hub
// is still starting.
func (m *HealthMonitor) fleet(now time.Time) fleetView {
	if m.Shard != nil {
		m.heartbeats.keep(m.Shard.Owns) // clusters another replica took over are its to count
	}
	unreachable, total := m.heartbeats.unreachable(now, m.GracePeriod)
	return fleetView{unreachable: unreachable, total: total, startingFor: max(0, m.started.Add(m.GracePeriod).Sub(now))}
}

// take asks the rate limiter for one NoExecute taint now.
func (m *HealthMonitor) take() (bool, time.Duration) {
	now := m.now()
	r := m.limiter.ReserveN(now, 1)
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		return false, wait
	}
	return true, 0
}

// healthNoExecute returns the key of the NoExecute health taint the cluster carries, or "".
func (m *HealthMonitor) healthNoExecute(cluster *clusterv1alpha1.Cluster) string {
	for _, t := range cluster.Spec.Taints {
		if isHealthTaint(t) && t.Effect == corev1.TaintEffectNoExecute {
			return t.Key
		}
	}
	return ""
}

// setHealthTaints gives the cluster exactly the health taints it must carry: noSchedule and noExecute name
// the key of each effect (empty for none). The taint list is one field that people (`flotilla taint`) write
// too: the patch carries the resourceVersion it was computed from, so a taint added meanwhile is never lost:
// the patch fails, and the next reconcile starts from the new list.
func (m *HealthMonitor) setHealthTaints(ctx context.Context, cluster *clusterv1alpha1.Cluster, noSchedule, noExecute string) error {
	taints := withHealthTaints(cluster.Spec.Taints, noSchedule, noExecute, m.now())
	if slices.EqualFunc(taints, cluster.Spec.Taints, sameTaint) {
		return nil
	}
	patch := client.MergeFromWithOptions(cluster.DeepCopy(), client.MergeFromWithOptimisticLock{})
	cluster.Spec.Taints = taints
	return m.Client.Patch(ctx, cluster, patch, client.FieldOwner(HealthFieldManager))
}

// setConditions applies the Ready condition and the Failover condition (nil: none), the status fields the
// monitor owns, when they changed, and records an event when the status or reason of either did.
func (m *HealthMonitor) setConditions(ctx context.Context, cluster *clusterv1alpha1.Cluster, ready metav1.Condition, failover *metav1.Condition) error {
	wanted := []metav1.Condition{ready}
	if failover != nil {
		wanted = append(wanted, *failover)
	}
	var conditions []metav1.Condition
	changed := failover == nil && meta.FindStatusCondition(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionFailover) != nil
	for _, c := range wanted {
		c.ObservedGeneration = cluster.Generation
		set, ch := withCondition(cluster.Status.Conditions, c)
		conditions, changed = append(conditions, set...), changed || ch
	}
	if !changed {
		return nil
	}
	if err := scheme.ApplyStatus(ctx, m.Client, cluster, HealthFieldManager, &clusterv1alpha1.ClusterStatus{Conditions: conditions}); err != nil {
		return err
	}
	for _, c := range wanted {
		previous := meta.FindStatusCondition(cluster.Status.Conditions, c.Type)
		if previous != nil && previous.Status == c.Status && previous.Reason == c.Reason {
			continue
		}
		eventType := corev1.EventTypeNormal
		if c.Status != metav1.ConditionTrue || c.Type == clusterv1alpha1.ClusterConditionFailover {
			eventType = corev1.EventTypeWarning
		}
		m.Recorder.Eventf(cluster, nil, eventType, c.Reason, "HealthChanged", "%s=%s: %s", c.Type, c.Status, c.Message)
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
	// lost says the cluster was judged unreachable before the hub started and has not renewed since.
	lost bool
	// hubWrote is the version the hub's own write of the Lease replaced: a cache that has not caught up with
	// that write shows it, and it is no heartbeat either.
	hubWrote string
}

// observe records the Lease version of a cluster seen at now and returns what the hub knows of its heartbeat.
func (h *heartbeats) observe(cluster, version string, now time.Time) heartbeat {
	h.mu.Lock()
	defer h.mu.Unlock()
	hb, known := h.seen[cluster]
	switch {
	case !known:
		hb = heartbeat{version: version, observed: now}
	case hb.version != version && version != hb.hubWrote:
		hb = heartbeat{version: version, observed: now, changed: true}
	}
	h.seen[cluster] = hb
	return hb
}

// wrote records that the hub itself changed a cluster's Lease from version before to after: neither is a
// heartbeat when seen next.
func (h *heartbeats) wrote(cluster, before, after string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hb, ok := h.seen[cluster]; ok {
		hb.version, hb.hubWrote = after, before
		h.seen[cluster] = hb
	}
}

// lose records that a cluster's Lease, unchanged since the hub started, is no heartbeat.
func (h *heartbeats) lose(cluster string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hb, ok := h.seen[cluster]; ok && !hb.changed {
		hb.lost = true
		h.seen[cluster] = hb
	}
}

// unreachable counts the clusters without a heartbeat for the grace period at now, of all it knows.
func (h *heartbeats) unreachable(now time.Time, grace time.Duration) (n, total int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, hb := range h.seen {
		if hb.version == "" || hb.lost || now.Sub(hb.observed) > grace {
			n++
		}
	}
	return n, len(h.seen)
}

// keep forgets the clusters owns says no.
func (h *heartbeats) keep(owns func(cluster string) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for cluster := range h.seen {
		if !owns(cluster) {
			delete(h.seen, cluster)
		}
	}
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

// withHealthTaints returns taints with exactly the wanted health taints of the hub's two keys: noSchedule
// and noExecute name the key for each effect (empty for none). Every other taint stays, and so does the time
// an existing health taint was added.
func withHealthTaints(taints []corev1.Taint, noSchedule, noExecute string, now time.Time) []corev1.Taint {
	want := map[corev1.TaintEffect]string{corev1.TaintEffectNoSchedule: noSchedule, corev1.TaintEffectNoExecute: noExecute}
	out := make([]corev1.Taint, 0, len(taints)+2)
	for _, t := range taints {
		if !isHealthTaint(t) || want[t.Effect] == t.Key {
			out = append(out, t)
		}
	}
	for _, effect := range []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute} {
		key := want[effect]
		if key != "" && !slices.ContainsFunc(out, func(t corev1.Taint) bool { return t.Key == key && t.Effect == effect }) {
			out = append(out, corev1.Taint{Key: key, Effect: effect, TimeAdded: &metav1.Time{Time: now}})
		}
	}
	return out
}

// isHealthTaint reports whether t is one of the hub's health taints, of either effect it sets.
func isHealthTaint(t corev1.Taint) bool {
	return (t.Key == clusterv1alpha1.TaintClusterNotReady || t.Key == clusterv1alpha1.TaintClusterUnreachable) &&
		(t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute)
}

func sameTaint(a, b corev1.Taint) bool {
	return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect
}
