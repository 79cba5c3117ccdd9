package inventory

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	inventoryv1alpha1 "github.com/flotilla-io/flotilla/api/inventory/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// Event reasons of the publisher, on the Cluster.
const (
	// ReasonPublished: the Cluster's ClusterProfile was created, or moved to its new set's namespace.
	ReasonPublished = "ClusterProfilePublished"
	// ReasonNotPublished: the Cluster has no ClusterProfile, and the message says why.
	ReasonNotPublished = "ClusterProfileNotPublished"
)

// fieldManager owns the ClusterProfiles' labels, owner, spec and status.
var fieldManager = workv1alpha1.ControllerFieldManager("inventory")

// byName indexes the cached ClusterProfiles by name, which is their Cluster's: a Cluster's profiles in other
// namespaces than its set's are found without listing every profile.
const byName = "inventory.metadata.name"

// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=clusterprofiles,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=clusterprofiles/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Publisher keeps one ClusterProfile per Cluster, named after it, in the namespace of its exclusive
// ClusterSet (inventoryv1alpha1.ClusterSetNamespace), so RBAC on one namespace shows a consumer one set. It
// creates that namespace when needed, labelled with the set as the KEP asks. It writes a profile only when
// what it says differs from what the Cluster says: a heartbeat is a Lease renewal and does not reach it, and
// a Cluster status change it does not publish (capacity, API list) is filtered out before a reconcile. When
// a Cluster changes sets, its profile in the new set's namespace is created before the old one is deleted.
// The Cluster is the profile's controller, so the garbage collector deletes the profile with the Cluster; a
// profile another cluster manager wrote is never touched.
type Publisher struct {
	Client client.Client
	// Reader reads namespaces from the API server: the hub caches none.
	Reader   client.Reader
	Recorder events.EventRecorder
}

// Setup registers the publisher with the manager. It looks at a Cluster when it appears, is deleted, or
// changes in what its profile says, and when one of the profiles it controls changes (someone edited or
// deleted it).
func Setup(mgr ctrl.Manager) error {
	err := mgr.GetFieldIndexer().IndexField(context.Background(), &inventoryv1alpha1.ClusterProfile{}, byName,
		func(o client.Object) []string { return []string{o.GetName()} })
	if err != nil {
		return err
	}
	p := &Publisher{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("flotilla-inventory")}
	return ctrl.NewControllerManagedBy(mgr).Named("inventory").
		For(&clusterv1alpha1.Cluster{}, builder.WithPredicates(predicate.Funcs{UpdateFunc: profileChanged})).
		Owns(&inventoryv1alpha1.ClusterProfile{}).
		Complete(p)
}

// profileChanged says whether a Cluster update changes what its profile says: its set, deletion, region,
// zones, provider, version or Ready condition. The rest of a Cluster's status (capacity, nodes, APIs) is
// not published.
func profileChanged(e event.UpdateEvent) bool {
	o, n := e.ObjectOld.(*clusterv1alpha1.Cluster), e.ObjectNew.(*clusterv1alpha1.Cluster)
	readyOf := func(c *clusterv1alpha1.Cluster) metav1.Condition {
		if r := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady); r != nil {
			return *r
		}
		return metav1.Condition{}
	}
	oldReady, newReady := readyOf(o), readyOf(n)
	return o.Labels[clusterv1alpha1.LabelClusterSet] != n.Labels[clusterv1alpha1.LabelClusterSet] ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
		o.Spec.Region != n.Spec.Region || o.Spec.Provider != n.Spec.Provider || !slices.Equal(o.Spec.Zones, n.Spec.Zones) ||
		o.Status.KubernetesVersion != n.Status.KubernetesVersion ||
		oldReady.Status != newReady.Status || oldReady.Reason != newReady.Reason || oldReady.Message != newReady.Message
}

// Reconcile brings one Cluster's ClusterProfile up to date, in its set's namespace and nowhere else.
func (p *Publisher) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster := &clusterv1alpha1.Cluster{}
	if err := p.Client.Get(ctx, req.NamespacedName, cluster); err != nil {
		// Gone: the garbage collector deletes its profile, which it controls.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ns, err := NamespaceOf(cluster)
	if err != nil {
		// The Cluster is in no set a namespace can hold: it is no longer in the set its old profile says.
		p.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, ReasonNotPublished, "Publish", "%s", err.Error())
		return ctrl.Result{}, p.deleteElsewhere(ctx, cluster, "")
	}
	desired := Desired(cluster, ns)
	current := &inventoryv1alpha1.ClusterProfile{}
	switch err := p.Client.Get(ctx, client.ObjectKeyFromObject(desired), current); {
	case apierrors.IsNotFound(err):
		if err := p.ensureNamespace(ctx, ns, ClusterSetOf(cluster)); err != nil {
			return ctrl.Result{}, err
		}
		if err := p.apply(ctx, desired, true, true); err != nil {
			return ctrl.Result{}, err
		}
		p.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, ReasonPublished, "Publish", "ClusterProfile %s/%s", ns, cluster.Name)
	case err != nil:
		return ctrl.Result{}, err
	case current.Labels[inventoryv1alpha1.LabelClusterManager] != inventoryv1alpha1.ClusterManagerName:
		p.Recorder.Eventf(cluster, nil, corev1.EventTypeWarning, ReasonNotPublished, "Publish",
			"ClusterProfile %s/%s belongs to cluster manager %q", ns, cluster.Name, current.Labels[inventoryv1alpha1.LabelClusterManager])
		return ctrl.Result{}, nil
	default:
		if err := p.apply(ctx, desired, !ObjectUpToDate(current, desired), !StatusUpToDate(current, desired)); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, p.deleteElsewhere(ctx, cluster, ns)
}

// apply writes desired's labels, owner and spec when object is set, and its status when status is set, by
// server-side apply as the publisher: the first creates the profile when it is missing.
func (p *Publisher) apply(ctx context.Context, desired *inventoryv1alpha1.ClusterProfile, object, status bool) error {
	if object {
		fields, err := runtime.DefaultUnstructuredConverter.ToUnstructured(desired)
		if err != nil {
			return err
		}
		metadata, _ := fields["metadata"].(map[string]any)
		u, err := scheme.ApplyObject(p.Client, desired, map[string]any{
			"metadata": map[string]any{"labels": metadata["labels"], "ownerReferences": metadata["ownerReferences"]},
			"spec":     fields["spec"],
		})
		if err != nil {
			return err
		}
		if err := p.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
			return err
		}
	}
	if !status {
		return nil
	}
	return scheme.ApplyStatus(ctx, p.Client, desired, fieldManager, &desired.Status)
}

// ensureNamespace creates the namespace of a set's profiles, or labels one that exists without the KEP's
// set label. It runs only when a profile is to be created there.
func (p *Publisher) ensureNamespace(ctx context.Context, ns, set string) error {
	namespace := &corev1.Namespace{}
	switch err := p.Reader.Get(ctx, client.ObjectKey{Name: ns}, namespace); {
	case apierrors.IsNotFound(err):
		namespace = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
			inventoryv1alpha1.LabelClusterSet:     set,
			inventoryv1alpha1.LabelClusterManager: inventoryv1alpha1.ClusterManagerName,
		}}}
		if err := p.Client.Create(ctx, namespace); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	case err != nil:
		return err
	case namespace.Labels[inventoryv1alpha1.LabelClusterSet] == set:
		return nil
	}
	patch := client.MergeFrom(namespace.DeepCopy())
	if namespace.Labels == nil {
		namespace.Labels = map[string]string{}
	}
	namespace.Labels[inventoryv1alpha1.LabelClusterSet] = set
	return p.Client.Patch(ctx, namespace, patch)
}

// deleteElsewhere deletes the profiles Flotilla published for cluster in other namespaces than keep: those
// of a set it has left.
func (p *Publisher) deleteElsewhere(ctx context.Context, cluster *clusterv1alpha1.Cluster, keep string) error {
	profiles := &inventoryv1alpha1.ClusterProfileList{}
	if err := p.Client.List(ctx, profiles, client.MatchingFields{byName: cluster.Name},
		client.MatchingLabels{inventoryv1alpha1.LabelClusterManager: inventoryv1alpha1.ClusterManagerName}); err != nil {
		return err
	}
	for i := range profiles.Items {
		old := &profiles.Items[i]
		if old.Namespace == keep || old.DeletionTimestamp != nil {
			continue
		}
		err := p.Client.Delete(ctx, old, client.Preconditions{UID: &old.UID})
		if err := client.IgnoreNotFound(err); err != nil {
			return err
		}
	}
	return nil
}
