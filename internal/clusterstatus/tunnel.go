package clusterstatus

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// Reasons of the TunnelConnected condition.
const (
	ReasonTunnelConnected    = "Connected"
	ReasonTunnelNotConnected = "NotConnected"
)

// Tunnels is what the hub knows of Pull clusters' tunnels (tunnel.Registry).
type Tunnels interface {
	// Usable reports whether cluster's agent holds a tunnel to this hub open that still stands for c, the
	// Cluster as it is now (nil: gone), and closes one that does not.
	Usable(cluster string, c *clusterv1alpha1.Cluster) bool
	// Notify calls f, which must not block, with a cluster's name each time its tunnel opens or closes.
	Notify(f func(cluster string))
}

// TunnelStatus writes each Pull cluster's TunnelConnected condition: True while its agent's tunnel to this
// hub is open. It is woken when a tunnel opens or closes, and for every Pull cluster when it starts, so a hub
// that restarted says False until the agent is back.
type TunnelStatus struct {
	Client client.Client
	// Clusters reads the Cluster straight from the API server: a tunnel can close and open again faster than
	// the cache sees the first write, and a stale cached condition would hide the second change.
	Clusters client.Reader
	Tunnels  Tunnels
	Recorder events.EventRecorder
}

// SetupTunnelStatus registers the TunnelConnected writer with the manager.
func SetupTunnelStatus(mgr ctrl.Manager, tunnels Tunnels) error {
	r := &TunnelStatus{Client: mgr.GetClient(), Clusters: mgr.GetAPIReader(), Tunnels: tunnels, Recorder: mgr.GetEventRecorder("flotilla-tunnel")}
	// Every Cluster, not only Pull ones: a Cluster that leaves Pull mode or is deleted closes its tunnel.
	// Annotations too: they name the agent a tunnel stands for, and when its certificate expires.
	changes := source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		tunnels.Notify(func(cluster string) { q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: cluster}}) })
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).Named("tunnel-status").
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WatchesRawSource(changes).
		Complete(r)
}

// Reconcile applies one Pull cluster's TunnelConnected condition when it changed.
func (r *TunnelStatus) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster := &clusterv1alpha1.Cluster{}
	if err := r.Clusters.Get(ctx, req.NamespacedName, cluster); apierrors.IsNotFound(err) {
		r.Tunnels.Usable(req.Name, nil) // closes the tunnel of a Cluster that is gone
		return ctrl.Result{}, nil
	} else if err != nil {
		return ctrl.Result{}, err
	}
	usable := r.Tunnels.Usable(cluster.Name, cluster)
	if cluster.Spec.SyncMode != clusterv1alpha1.Pull || cluster.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	c := metav1.Condition{Type: clusterv1alpha1.ClusterConditionTunnelConnected, ObservedGeneration: cluster.Generation,
		Status: metav1.ConditionTrue, Reason: ReasonTunnelConnected,
		Message: "the agent's tunnel to the hub is open: the hub reaches the member's API server through it"}
	if !usable {
		c.Status, c.Reason = metav1.ConditionFalse, ReasonTunnelNotConnected
		c.Message = "the agent holds no tunnel to this hub (not running, cannot reach the hub, or restarting): the hub cannot reach the member's API server"
	}
	conditions, changed := withCondition(cluster.Status.Conditions, c)
	if !changed {
		return ctrl.Result{}, nil
	}
	if err := scheme.ApplyStatus(ctx, r.Client, cluster, TunnelFieldManager, &clusterv1alpha1.ClusterStatus{Conditions: conditions}); err != nil {
		return ctrl.Result{}, err
	}
	kind := corev1.EventTypeNormal
	if c.Status != metav1.ConditionTrue {
		kind = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(cluster, nil, kind, c.Reason, "Tunnel", "%s", c.Message)
	return ctrl.Result{}, nil
}
