package clusterset

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Builtin returns the built-in ClusterSet name as the hub keeps it: default holds the Clusters without the
// exclusive label, global every Cluster. Admission refuses another spec for them (builtinSetsAdmission in
// internal/admission).
func Builtin(name string) *clusterv1alpha1.ClusterSet {
	set := &clusterv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
	set.Spec.ClusterSelector.SelectorType = clusterv1alpha1.ExclusiveClusterSetLabel
	if name == clusterv1alpha1.ClusterSetGlobal {
		set.Spec.ClusterSelector = clusterv1alpha1.ClusterSetSelector{SelectorType: clusterv1alpha1.LabelSelector, LabelSelector: &metav1.LabelSelector{}}
	}
	return set
}

// Builtins are the names of the built-in ClusterSets.
var Builtins = []string{clusterv1alpha1.ClusterSetDefault, clusterv1alpha1.ClusterSetGlobal}

// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=clustersets,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// BuiltinSets keeps the built-in ClusterSets in existence: it creates them when the hub starts and again
// when someone deletes one (as OCM does), so a namespace bound to default or global never loses its grant
// for longer than a reconcile. It never changes an existing set: admission keeps their spec.
type BuiltinSets struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// SetupBuiltinSets registers the controller: both sets are looked at once at start, and when one is deleted.
func SetupBuiltinSets(mgr ctrl.Manager) error {
	r := &BuiltinSets{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("flotilla-clusterset")}
	builtin := predicate.NewPredicateFuncs(func(o client.Object) bool { return slices.Contains(Builtins, o.GetName()) })
	atStart := source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		for _, name := range Builtins {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).Named("clusterset-builtins").
		For(&clusterv1alpha1.ClusterSet{}, builder.WithPredicates(builtin, predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false },
			UpdateFunc: func(event.UpdateEvent) bool { return false },
		})).
		WatchesRawSource(atStart).
		Complete(r)
}

// Reconcile creates one built-in set when it does not exist.
func (r *BuiltinSets) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if !slices.Contains(Builtins, req.Name) {
		return ctrl.Result{}, nil
	}
	err := r.Client.Get(ctx, req.NamespacedName, &clusterv1alpha1.ClusterSet{})
	if !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err // there (being deleted or not: its deletion brings it back here), or unreadable
	}
	set := Builtin(req.Name)
	if err := r.Client.Create(ctx, set); err != nil {
		return ctrl.Result{}, client.IgnoreAlreadyExists(err)
	}
	r.Recorder.Eventf(set, nil, corev1.EventTypeNormal, "Created", "Create", "the hub created the built-in ClusterSet %s", set.Name)
	return ctrl.Result{}, nil
}
