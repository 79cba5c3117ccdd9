package addon

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// fieldManager owns what the add-on controller writes: Works, ClusterAddOns' rendering status, AddOns' status.
var fieldManager = workv1alpha1.ControllerFieldManager("addon")

// byName indexes ClusterAddOns by name: the AddOn they enable.
const byName = "addon.flotilla.io/clusteraddon-name"

// +kubebuilder:rbac:groups=addon.flotilla.io,resources=addons,verbs=get;list;watch
// +kubebuilder:rbac:groups=addon.flotilla.io,resources=addons/status,verbs=patch
// +kubebuilder:rbac:groups=addon.flotilla.io,resources=clusteraddons,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=addon.flotilla.io,resources=clusteraddons/status,verbs=patch
// +kubebuilder:rbac:groups=addon.flotilla.io,resources=addonconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=placements;placementdecisions;clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=works,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Controller runs add-ons: per AddOn, it enables the add-on on the clusters its placements decide on
// (strategy.go), renders its template for every enabled cluster (render.go, config.go), decides by each
// placement's rollout strategy which clusters get a new rendering now (rollout.go), writes their Works, and
// reports the rendering on each ClusterAddOn and the whole on the AddOn. The ClusterAddOn controller
// (clusteraddon_controller.go) does the rest of a cluster's add-on: registration, health, disabling.
type Controller struct {
	Client client.Client
	// Reader reads the AddOn's rollout status from the API server: a wave decided on a status the cache has
	// not caught up with would be counted twice.
	Reader   client.Reader
	Recorder events.EventRecorder
	// HubURL is the hub's address for members ({{HUB_URL}}).
	HubURL string
	now    func() time.Time
}

// Setup registers the add-on controller. An AddOn is looked at when its spec changes, when one of its
// ClusterAddOns or Works changes, when a Placement it installs by or its decisions change, and when an
// AddOnConfig changes.
func Setup(mgr ctrl.Manager, hubURL string) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &addonv1alpha1.ClusterAddOn{}, byName, func(o client.Object) []string {
		return []string{o.GetName()}
	}); err != nil {
		return err
	}
	r := &Controller{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("flotilla-addon"), HubURL: hubURL, now: time.Now}
	named := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.GetName()}}}
	})
	labelled := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if name := o.GetLabels()[addonv1alpha1.LabelAddOn]; name != "" {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: name}}}
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).Named("addon").
		For(&addonv1alpha1.AddOn{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&addonv1alpha1.ClusterAddOn{}, named).
		Watches(&workv1alpha1.Work{}, labelled, builder.WithPredicates(hasAddOnLabel)).
		Watches(&clusterv1alpha1.Placement{}, handler.EnqueueRequestsFromMapFunc(r.installedBy)).
		Watches(&clusterv1alpha1.PlacementDecision{}, handler.EnqueueRequestsFromMapFunc(r.installedBy)).
		Watches(&addonv1alpha1.AddOnConfig{}, handler.EnqueueRequestsFromMapFunc(r.all)).
		Complete(r)
}

var hasAddOnLabel = predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[addonv1alpha1.LabelAddOn] != "" })

// installedBy maps a Placement, or one of its PlacementDecisions, to the AddOns installed by it.
func (r *Controller) installedBy(ctx context.Context, o client.Object) []reconcile.Request {
	name := o.GetName()
	if _, ok := o.(*clusterv1alpha1.PlacementDecision); ok {
		name = o.GetLabels()[clusterv1alpha1.LabelPlacement]
	}
	addons := &addonv1alpha1.AddOnList{}
	if err := r.Client.List(ctx, addons); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, a := range addons.Items {
		for _, p := range a.Spec.InstallStrategy.Placements {
			if p.Namespace == o.GetNamespace() && p.Name == name {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: a.Name}})
				break
			}
		}
	}
	return out
}

// all maps an AddOnConfig to every AddOn: any may name it, by default, placement or cluster.
func (r *Controller) all(ctx context.Context, _ client.Object) []reconcile.Request {
	addons := &addonv1alpha1.AddOnList{}
	if err := r.Client.List(ctx, addons); err != nil {
		return nil
	}
	out := make([]reconcile.Request, len(addons.Items))
	for i, a := range addons.Items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKey{Name: a.Name}}
	}
	return out
}

// target is one enabled cluster of an add-on.
type target struct {
	ca        *addonv1alpha1.ClusterAddOn
	cluster   string
	placement *placed
	work      *workv1alpha1.Work
	rendered  *Rendered
	configs   []addonv1alpha1.ConfigStatus
	// degraded says why the template does not render for the cluster ("" when it does).
	degraded string
}

// Reconcile takes one AddOn a step towards running where it is enabled.
func (r *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	a := &addonv1alpha1.AddOn{}
	if err := r.Client.Get(ctx, req.NamespacedName, a); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if a.DeletionTimestamp != nil {
		return ctrl.Result{}, nil // the garbage collector deletes the ClusterAddOns the strategy created
	}
	ps, err := r.readPlacements(ctx, a)
	if err != nil {
		return ctrl.Result{}, err
	}
	current, err := clusterAddOns(ctx, r.Client, a.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	hold, err := r.installByStrategy(ctx, a, ps, current)
	if err != nil {
		return ctrl.Result{}, err
	}
	targets, err := r.targets(ctx, a, ps, current)
	if err != nil {
		return ctrl.Result{}, err
	}
	plan, err := r.roll(ctx, a, ps, targets)
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, t := range targets {
		if err := r.writeWork(ctx, a, t, plan.onTarget[t.cluster]); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.writeClusterStatus(ctx, t, plan.onTarget[t.cluster]); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.writeStatus(ctx, a, current, targets, plan, hold); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: plan.requeue}, nil
}

// clusterAddOns lists the ClusterAddOns of an add-on, on every cluster.
func clusterAddOns(ctx context.Context, c client.Reader, addon string) ([]addonv1alpha1.ClusterAddOn, error) {
	list := &addonv1alpha1.ClusterAddOnList{}
	if err := c.List(ctx, list, client.MatchingFields{byName: addon}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// targets renders the add-on for each cluster it is enabled on (not being disabled, and joined).
func (r *Controller) targets(ctx context.Context, a *addonv1alpha1.AddOn, ps []*placed, current []addonv1alpha1.ClusterAddOn) ([]*target, error) {
	works := &workv1alpha1.WorkList{}
	if err := r.Client.List(ctx, works, client.MatchingLabels{addonv1alpha1.LabelAddOn: a.Name}); err != nil {
		return nil, err
	}
	var out []*target
	for i := range current {
		ca := &current[i]
		cluster, ok := clusterv1alpha1.ClusterOfNamespace(ca.Namespace)
		if !ok || ca.DeletionTimestamp != nil {
			continue
		}
		if joined, err := r.joined(ctx, cluster); err != nil || !joined {
			if err != nil {
				return nil, err
			}
			continue
		}
		t := &target{ca: ca, cluster: cluster, placement: placementOf(ps, cluster)}
		for j := range works.Items {
			if w := &works.Items[j]; w.Namespace == ca.Namespace && w.Name == addonv1alpha1.WorkName(a.Name) {
				t.work = w
			}
		}
		var strategy *addonv1alpha1.PlacementStrategy
		if t.placement != nil {
			strategy = t.placement.strategy
		}
		config, refs, err := readConfigs(ctx, r.Client, chooseConfigs(a, ca, strategy))
		var missing errMissing
		switch {
		case errors.As(err, &missing):
			t.degraded = missing.msg
		case err != nil:
			return nil, err
		default:
			t.configs = refs
			t.rendered, err = Render(Input{AddOn: a, ClusterAddOn: ca, Cluster: cluster, HubURL: r.HubURL, Config: config})
			if err != nil {
				t.degraded = err.Error()
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// writeWork writes a cluster's add-on Work when its rendering changed and the cluster may take it now: it
// has no Work yet, or the rollout sent it the target, or no placement rolls it (Manual).
func (r *Controller) writeWork(ctx context.Context, a *addonv1alpha1.AddOn, t *target, onTarget bool) error {
	if t.rendered == nil || (t.work != nil && t.work.Annotations[workv1alpha1.AnnotationRevision] == t.rendered.Hash) {
		return nil
	}
	if t.work != nil && t.placement != nil && !onTarget {
		return nil // the rollout has not reached the cluster: it keeps what it runs
	}
	manifests := make([]any, len(t.rendered.Manifests))
	for i, m := range t.rendered.Manifests {
		manifests[i] = m
	}
	w := &workv1alpha1.Work{}
	w.Namespace, w.Name = t.ca.Namespace, addonv1alpha1.WorkName(a.Name)
	u, err := scheme.ApplyObject(r.Client, w, map[string]any{
		"metadata": map[string]any{
			"labels":      map[string]any{addonv1alpha1.LabelAddOn: a.Name},
			"annotations": map[string]any{workv1alpha1.AnnotationRevision: t.rendered.Hash},
			// The executor deletes the member objects before the Work goes.
			"finalizers": []any{workv1alpha1.FinalizerExecution},
		},
		"spec": map[string]any{"workload": map[string]any{"manifests": manifests}},
	})
	if err != nil {
		return err
	}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("writing the Work of add-on %s on cluster %s: %w", a.Name, t.cluster, err)
	}
	verb := "installing"
	if t.work != nil {
		verb = "updating"
	}
	r.Recorder.Eventf(t.ca, nil, corev1.EventTypeNormal, "WorkWritten", "Render", "%s revision %s in namespace %s", verb, t.rendered.Hash, t.rendered.Namespace)
	if t.work == nil {
		t.work = &workv1alpha1.Work{}
	}
	if t.work.Annotations == nil {
		t.work.Annotations = map[string]string{}
	}
	t.work.Annotations[workv1alpha1.AnnotationRevision] = t.rendered.Hash
	t.work.Status = workv1alpha1.WorkStatus{} // a new spec: nothing of it is applied yet
	return nil
}
