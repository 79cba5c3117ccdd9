package clusterstatus

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// HeartbeatPeriod is the shortest time between two heartbeats of a cluster, and the period when its Lease
// has no duration yet. The health monitor sets each Lease's duration to the hub's grace period, and a
// reporter renews the Lease and looks at the member every quarter of that (RenewalPeriod): every 10 s with
// the default grace period of 40 s, every 40 s for a fleet whose hub runs with --cluster-grace-period 160s.
const HeartbeatPeriod = 10 * time.Second

// MinGracePeriod is the shortest grace period a hub runs with (--cluster-grace-period): two heartbeats, so
// that one heartbeat late or lost never makes a cluster unreachable.
const MinGracePeriod = 2 * HeartbeatPeriod

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

// LeaseRenewer renews one cluster's Lease on the hub: the heartbeat the health monitor judges liveness by.
// It updates the Lease as last renewed, and reads it first only when there was none or the last renewal
// failed. A renewal refused because the Lease changed since (the hub set its duration) is made again at
// once, from the Lease read again. One LeaseRenewer serves one cluster, from one goroutine.
type LeaseRenewer struct {
	// Hub is a client for the hub; Cluster names the cluster and its Lease; Holder is written as the
	// Lease's holder.
	Hub             client.Client
	Cluster, Holder string

	lease *coordinationv1.Lease
}

// Renew renews the Lease once.
func (l *LeaseRenewer) Renew(ctx context.Context) error {
	err := l.renew(ctx)
	if apierrors.IsConflict(err) {
		err = l.renew(ctx)
	}
	return err
}

// Period is how long after a renewal the next one is due: LeasePeriod of the Lease as last renewed
// (HeartbeatPeriod after a failed renewal).
func (l *LeaseRenewer) Period() time.Duration { return LeasePeriod(l.lease) }

func (l *LeaseRenewer) renew(ctx context.Context) error {
	if l.lease == nil {
		lease := &coordinationv1.Lease{}
		key := client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(l.Cluster), Name: l.Cluster}
		if err := l.Hub.Get(ctx, key, lease); err != nil {
			return err
		}
		l.lease = lease
	}
	l.lease.Spec.HolderIdentity = ptr.To(l.Holder)
	l.lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if err := l.Hub.Update(ctx, l.lease); err != nil {
		l.lease = nil
		return err
	}
	return nil
}

// LastRenewals reads every cluster's heartbeat with one LIST of Leases across namespaces (a cluster's Lease
// is named after it, in its namespace), not one GET per cluster: the last renewal of each cluster that has
// renewed. opts narrow the LIST, for example to one cluster's name with a field selector.
func LastRenewals(ctx context.Context, c client.Reader, opts ...client.ListOption) (map[string]time.Time, error) {
	leases := &coordinationv1.LeaseList{}
	if err := c.List(ctx, leases, opts...); err != nil {
		return nil, err
	}
	out := make(map[string]time.Time, len(leases.Items))
	for _, l := range leases.Items {
		if name, ok := clusterv1alpha1.ClusterOfNamespace(l.Namespace); ok && name == l.Name && l.Spec.RenewTime != nil {
			out[name] = l.Spec.RenewTime.Time
		}
	}
	return out, nil
}
