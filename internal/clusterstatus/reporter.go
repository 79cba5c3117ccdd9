package clusterstatus

import (
	"context"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

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

	// leases renews the cluster's Lease; made on the first report.
	leases *LeaseRenewer
	// known is the cluster's status as last read from the hub or applied there, and sinceRead counts the
	// reports since it was read.
	known     *clusterv1alpha1.ClusterStatus
	sinceRead int
	// models are the cluster's spec.resourceModels as last read.
	models []clusterv1alpha1.ResourceModel
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

// Period is how long after a report the next one is due: the Lease's renewal period.
func (r *Reporter) Period() time.Duration {
	if r.leases == nil {
		return HeartbeatPeriod
	}
	return r.leases.Period()
}

// ReportOnce collects the member's status, renews the Lease, and writes the status facts if they changed. A
// member that does not answer gets no heartbeat, so the hub sees it as unreachable.
func (r *Reporter) ReportOnce(ctx context.Context) error {
	current, err := r.currentStatus(ctx)
	if err != nil {
		return err
	}
	observed, err := Collect(ctx, r.Member, r.AgentVersion, r.models)
	if err != nil {
		return err
	}
	if r.leases == nil {
		r.leases = &LeaseRenewer{Hub: r.Hub, Cluster: r.Cluster, Holder: r.Holder}
	}
	if err := r.leases.Renew(ctx); err != nil {
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
	if err := scheme.ApplyStatus(ctx, r.Hub, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: r.Cluster}}, manager, want); err != nil {
		r.known = nil
		return err
	}
	r.known = want // the reporter's fields on the hub are now exactly these
	return nil
}

// currentStatus is the cluster's status as the reporter knows it, read from the hub (with the cluster's
// resource models) when it knows none or used it StatusRereadEvery times.
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
	r.known, r.sinceRead, r.models = &cluster.Status, 0, cluster.Spec.ResourceModels
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
