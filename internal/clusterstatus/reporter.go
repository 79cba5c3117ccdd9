package clusterstatus

import (
	"context"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// HeartbeatPeriod is the shortest time between two heartbeats of a cluster, and the period when its Lease
// has no duration yet. The health monitor sets each Lease's duration to the hub's grace period, and a
// reporter renews the Lease and looks at the member every quarter of that (RenewalPeriod): every 10 s with
// the default grace period of 40 s, every 40 s for a fleet whose hub runs with --cluster-grace-period 160s.
const HeartbeatPeriod = 10 * time.Second

// RenewalPeriod is how often a cluster's Lease is renewed when the hub judges the cluster unreachable after
// grace without a renewal: a quarter of it, so that three renewals may be lost first, and never more often
// than HeartbeatPeriod.
func RenewalPeriod(grace time.Duration) time.Duration { return max(HeartbeatPeriod, grace/4) }

// LeasePeriod is the renewal period of a Lease, from the duration the hub set on it.
func LeasePeriod(lease *coordinationv1.Lease) time.Duration {
	if lease == nil || lease.Spec.LeaseDurationSeconds == nil {
		return HeartbeatPeriod
	}
	return RenewalPeriod(time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second)
}

// Reporter speaks for one member: it renews the cluster's Lease on the hub while the member answers, and
// applies the cluster's status facts when something in them changed (owners.go says who owns what). One
// Reporter serves one cluster, from one goroutine.
type Reporter struct {
	// Hub is a client for the hub: the agent's own identity, or the hub's for Push clusters.
	Hub client.Client
	// Member is a client for the member cluster.
	Member kubernetes.Interface
	// Cluster is the cluster's name; Holder names the reporter in the Lease.
	Cluster, Holder string
	// AgentVersion is reported in the status.
	AgentVersion string
	// FieldManager owns the facts the reporter writes (AgentFieldManager when empty; PushFieldManager for
	// Push clusters).
	FieldManager string

	// lease is the Lease as last renewed: the next renewal updates it without reading it first.
	lease *coordinationv1.Lease
	// known is the cluster's status as last read from the hub or applied there, and sinceRead counts the
	// reports since it was read.
	known     *clusterv1alpha1.ClusterStatus
	sinceRead int
}

// StatusRereadEvery is how many reports use the status the reporter last read or applied before it reads the
// Cluster from the hub again. In between a heartbeat costs the hub one request, the Lease's renewal, instead
// of three (a read of the Lease, the renewal, a read of the Cluster): at a thousand clusters, the hub's
// CPU at rest is mostly these requests. Reading now and then puts right a status that changed on the hub
// without the reporter's knowing (a hub restored from a backup, say).
const StatusRereadEvery = 6

// Run reports every Period until ctx ends. Errors are logged and retried next period.
func (r *Reporter) Run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		start := time.Now()
		if err := r.ReportOnce(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "reporting cluster status", "cluster", r.Cluster)
		}
		timer.Reset(r.Period() - time.Since(start))
	}
}

// Period is how long after a report the next one is due: LeasePeriod of the Lease as last renewed
// (HeartbeatPeriod after a failed renewal).
func (r *Reporter) Period() time.Duration { return LeasePeriod(r.lease) }

// ReportOnce collects the member's status, renews the Lease, and writes the status facts if they changed. A
// member that does not answer gets no heartbeat, so the hub sees it as unreachable.
func (r *Reporter) ReportOnce(ctx context.Context) error {
	observed, err := Collect(ctx, r.Member, r.AgentVersion)
	if err != nil {
		return err
	}
	if err := r.renewLease(ctx); err != nil {
		return err
	}
	current, err := r.currentStatus(ctx)
	if err != nil {
		return err
	}
	want := facts(current, observed)
	if equality.Semantic.DeepEqual(reportedFacts(current), want) {
		return nil
	}
	manager := r.FieldManager
	if manager == "" {
		manager = AgentFieldManager
	}
	if err := applyStatus(ctx, r.Hub, r.Cluster, manager, want); err != nil {
		r.known = nil
		return err
	}
	r.known = want // the reporter's fields on the hub are now exactly these
	return nil
}

// currentStatus is the cluster's status as the reporter knows it, read from the hub when it knows none or
// used it StatusRereadEvery times.
func (r *Reporter) currentStatus(ctx context.Context) (*clusterv1alpha1.ClusterStatus, error) {
	r.sinceRead++
	if r.known != nil && r.sinceRead < StatusRereadEvery {
		return r.known, nil
	}
	cluster := &clusterv1alpha1.Cluster{}
	if err := r.Hub.Get(ctx, client.ObjectKey{Name: r.Cluster}, cluster); err != nil {
		r.known = nil
		return nil, err
	}
	r.known, r.sinceRead = &cluster.Status, 0
	return r.known, nil
}

// facts is the status the reporter applies over current: what was observed, with its APIsComplete condition
// (keeping its transition time while its status stays), and, while the API list is incomplete, the last
// known entries of the group/versions discovery missed. The conditions of other writers are not part of it.
func facts(current, observed *clusterv1alpha1.ClusterStatus) *clusterv1alpha1.ClusterStatus {
	want := observed.DeepCopy()
	want.Conditions = nil
	apisComplete := meta.FindStatusCondition(observed.Conditions, clusterv1alpha1.ClusterConditionAPIsComplete)
	if apisComplete == nil || apisComplete.Status != metav1.ConditionTrue {
		want.APIEnablements = withLastKnown(want.APIEnablements, current.APIEnablements)
	}
	if apisComplete != nil {
		want.Conditions, _ = withCondition(current.Conditions, *apisComplete)
	}
	return want
}

// withLastKnown adds to an incomplete API list the last reported entries of the group/versions it lacks:
// a group whose discovery failed is not thereby gone from the member.
func withLastKnown(discovered, last []clusterv1alpha1.APIEnablement) []clusterv1alpha1.APIEnablement {
	out := slices.Clone(discovered)
	for _, e := range last {
		if !slices.ContainsFunc(discovered, func(d clusterv1alpha1.APIEnablement) bool { return d.GroupVersion == e.GroupVersion }) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b clusterv1alpha1.APIEnablement) int { return strings.Compare(a.GroupVersion, b.GroupVersion) })
	return out
}

// renewLease updates the Lease as last renewed, and reads it first only when there was none or the last
// renewal failed. A renewal refused because the Lease changed since (the hub set its duration) is made again
// at once, from the Lease read again.
func (r *Reporter) renewLease(ctx context.Context) error {
	err := r.renew(ctx)
	if apierrors.IsConflict(err) {
		err = r.renew(ctx)
	}
	return err
}

func (r *Reporter) renew(ctx context.Context) error {
	if r.lease == nil {
		lease := &coordinationv1.Lease{}
		key := client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(r.Cluster), Name: r.Cluster}
		if err := r.Hub.Get(ctx, key, lease); err != nil {
			return err
		}
		r.lease = lease
	}
	r.lease.Spec.HolderIdentity = ptr.To(r.Holder)
	r.lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if err := r.Hub.Update(ctx, r.lease); err != nil {
		r.lease = nil
		return err
	}
	return nil
}
