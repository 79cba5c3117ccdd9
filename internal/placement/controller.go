package placement

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterset"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// fieldManager owns the Placements' status and the PlacementDecisions' labels, owner and status.
var fieldManager = workv1alpha1.ControllerFieldManager("placement")

// Condition reasons of a Placement.
const (
	ReasonAllDecided      = "AllDecisionsScheduled"
	ReasonNotAllDecided   = "NotAllDecisionsScheduled"
	ReasonNoClusterFits   = "NoClusterMatched"
	ReasonValid           = "Valid"
	ReasonMisconfigured   = "Misconfigured"
	ReasonDecisionsUpdate = "DecisionsUpdated"
)

// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=placements,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=placements/status,verbs=patch
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=placementdecisions,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=placementdecisions/status,verbs=patch
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=clustersets;clustersetbindings;clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Controller decides each Placement and writes its decisions to PlacementDecisions named
// <placement>-decision-<n>, each of one decision group and at most 100 Clusters, owned by the Placement. It
// writes a PlacementDecision or the Placement's status only when what it says changed. A Placement that
// cannot be evaluated (a selector that does not parse) keeps its last decisions and says why in
// PlacementMisconfigured.
type Controller struct {
	Client   client.Client
	Recorder events.EventRecorder
}

// Setup registers the controller: a Placement is looked at when its spec changes or one of its
// PlacementDecisions is changed by someone else, the Placements of a namespace when a ClusterSetBinding
// there changes, and every Placement when a ClusterSet changes or a Cluster appears, goes, or changes in what
// a decision reads (decisionInputChanged; not its heartbeats). A Placement whose toleration runs out is
// looked at again then.
func Setup(mgr ctrl.Manager) error {
	r := &Controller{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("flotilla-placement")}
	placementsOf := func(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
		list := &clusterv1alpha1.PlacementList{}
		if err := r.Client.List(ctx, list, opts...); err != nil {
			return nil // the cache lists without error once synced
		}
		requests := make([]reconcile.Request, len(list.Items))
		for i := range list.Items {
			requests[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])}
		}
		return requests
	}
	inNamespace := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		return placementsOf(ctx, client.InNamespace(o.GetNamespace()))
	})
	every := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request { return placementsOf(ctx) })
	return ctrl.NewControllerManagedBy(mgr).Named("placement").
		For(&clusterv1alpha1.Placement{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&clusterv1alpha1.PlacementDecision{}).
		Watches(&clusterv1alpha1.ClusterSetBinding{}, inNamespace, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&clusterv1alpha1.ClusterSet{}, every, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&clusterv1alpha1.Cluster{}, every, builder.WithPredicates(predicate.Funcs{UpdateFunc: decisionInputChanged})).
		Complete(r)
}

// decisionInputChanged says whether a Cluster update changes what a decision reads: its labels, taints,
// deletion, allocatable resources, or the slow-moving status CEL predicates read (Kubernetes version,
// platform, node counts, API list). Conditions, health and what pods use are left out: they change with
// heartbeats and workloads, and a predicate reads them when the Placement is next decided.
func decisionInputChanged(e event.UpdateEvent) bool {
	o, n := e.ObjectOld.(*clusterv1alpha1.Cluster), e.ObjectNew.(*clusterv1alpha1.Cluster)
	allocatable := func(c *clusterv1alpha1.Cluster) corev1.ResourceList {
		if c.Status.ResourceSummary == nil {
			return nil
		}
		return c.Status.ResourceSummary.Allocatable
	}
	return !maps.Equal(o.Labels, n.Labels) || !equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
		!equality.Semantic.DeepEqual(allocatable(o), allocatable(n)) ||
		o.Status.KubernetesVersion != n.Status.KubernetesVersion || o.Status.Platform != n.Status.Platform ||
		!equality.Semantic.DeepEqual(o.Status.NodeSummary, n.Status.NodeSummary) ||
		!equality.Semantic.DeepEqual(o.Status.APIEnablements, n.Status.APIEnablements)
}

// Reconcile decides one Placement and writes what changed.
func (r *Controller) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &clusterv1alpha1.Placement{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if p.DeletionTimestamp != nil {
		return ctrl.Result{}, nil // the garbage collector deletes its decisions
	}
	// A Placement sees only the sets bound to its namespace, whatever the hub's mode (OCM's rule).
	grant, err := clusterset.Lookup(ctx, r.Client, p.Namespace, clusterset.RequireBindings)
	if err != nil {
		return ctrl.Result{}, err
	}
	clusters := &clusterv1alpha1.ClusterList{}
	if err := r.Client.List(ctx, clusters); err != nil {
		return ctrl.Result{}, err
	}
	all := &clusterv1alpha1.PlacementDecisionList{}
	if err := r.Client.List(ctx, all); err != nil {
		return ctrl.Result{}, err
	}
	in := Input{Sets: grant.Sets, Clusters: clusters.Items, Decided: map[string]bool{}, Decisions: map[string]int{}, Now: time.Now()}
	var current []*clusterv1alpha1.PlacementDecision
	for i := range all.Items {
		d := &all.Items[i]
		mine := d.Namespace == p.Namespace && d.Labels[clusterv1alpha1.LabelPlacement] == p.Name
		if mine && metav1.IsControlledBy(d, p) {
			current = append(current, d)
		}
		for _, c := range d.Status.Decisions {
			if mine {
				in.Decided[c.ClusterName] = true
			} else {
				in.Decisions[c.ClusterName]++
			}
		}
	}
	result, err := Decide(p, in)
	if err != nil {
		return ctrl.Result{}, r.writeStatus(ctx, p, p.Status.NumberOfSelectedClusters, p.Status.DecisionGroups,
			ptr.To(misconfigured(p, err)), meta.FindStatusCondition(p.Status.Conditions, clusterv1alpha1.PlacementConditionSatisfied))
	}
	desired, groups := Objects(p, result)
	changed, err := r.writeDecisions(ctx, desired, current)
	if err != nil {
		return ctrl.Result{}, err
	}
	if changed {
		r.Recorder.Eventf(p, nil, corev1.EventTypeNormal, ReasonDecisionsUpdate, "Decide", "%d clusters decided, in %d groups", len(result.Selected), len(groups))
	}
	valid := metav1.Condition{Type: clusterv1alpha1.PlacementConditionMisconfigured, Status: metav1.ConditionFalse,
		Reason: ReasonValid, Message: "the Placement is valid", ObservedGeneration: p.Generation}
	if err := r.writeStatus(ctx, p, int32(len(result.Selected)), groups, &valid, ptr.To(satisfied(p, result))); err != nil {
		return ctrl.Result{}, err
	}
	// A toleration that runs out drops its Cluster then; the second tolerationSeconds counts in is enough.
	if !result.Expires.IsZero() {
		return ctrl.Result{RequeueAfter: result.Expires.Sub(in.Now) + 100*time.Millisecond}, nil
	}
	return ctrl.Result{}, nil
}

func misconfigured(p *clusterv1alpha1.Placement, err error) metav1.Condition {
	return metav1.Condition{Type: clusterv1alpha1.PlacementConditionMisconfigured, Status: metav1.ConditionTrue,
		Reason: ReasonMisconfigured, Message: err.Error(), ObservedGeneration: p.Generation}
}

// satisfied is PlacementSatisfied: True when numberOfClusters Clusters (without it, at least one) were
// decided.
func satisfied(p *clusterv1alpha1.Placement, result Result) metav1.Condition {
	c := metav1.Condition{Type: clusterv1alpha1.PlacementConditionSatisfied, ObservedGeneration: p.Generation}
	want := result.Candidates
	if p.Spec.NumberOfClusters != nil {
		want = int(*p.Spec.NumberOfClusters)
	}
	switch {
	case len(result.Selected) == 0 && want != 0:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonNoClusterFits
		c.Message = fmt.Sprintf("no cluster of the ClusterSets bound to namespace %s fits", p.Namespace)
	case len(result.Selected) < want:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonNotAllDecided
		c.Message = fmt.Sprintf("%d of %d clusters decided: only %d fit", len(result.Selected), want, result.Candidates)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonAllDecided
		c.Message = fmt.Sprintf("%d clusters decided", len(result.Selected))
	}
	if len(result.Failed) > 0 {
		c.Message += "; " + failures(result.Failed)
	}
	return c
}

// maxFailuresShown bounds the Clusters a PlacementSatisfied message names for failed expressions.
const maxFailuresShown = 3

// failures says which Clusters a failed expression left out, and why, the first few by name.
func failures(failed map[string]string) string {
	names := slices.Sorted(maps.Keys(failed))
	parts := make([]string, 0, maxFailuresShown)
	for _, name := range names[:min(len(names), maxFailuresShown)] {
		parts = append(parts, name+" ("+failed[name]+")")
	}
	more := ""
	if len(names) > maxFailuresShown {
		more = fmt.Sprintf(" and %d more", len(names)-maxFailuresShown)
	}
	return fmt.Sprintf("not selected because an expression failed: %s%s", strings.Join(parts, ", "), more)
}

// Objects are the PlacementDecisions that hold the result's groups, named <placement>-decision-<n> from 1,
// each holding at most MaxDecisionsPerObject Clusters of one group (a group with none has one empty object)
// with the reason each was picked, and the groups' status.
func Objects(p *clusterv1alpha1.Placement, result Result) ([]*clusterv1alpha1.PlacementDecision, []clusterv1alpha1.DecisionGroupStatus) {
	groups := result.Groups
	var objects []*clusterv1alpha1.PlacementDecision
	statuses := make([]clusterv1alpha1.DecisionGroupStatus, len(groups))
	for gi, g := range groups {
		statuses[gi] = clusterv1alpha1.DecisionGroupStatus{DecisionGroupIndex: int32(gi), DecisionGroupName: g.Name, ClusterCount: int32(len(g.Clusters))}
		for start := 0; start == 0 || start < len(g.Clusters); start += clusterv1alpha1.MaxDecisionsPerObject {
			d := &clusterv1alpha1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{
				Namespace: p.Namespace, Name: fmt.Sprintf("%s-decision-%d", p.Name, len(objects)+1),
				Labels: map[string]string{
					clusterv1alpha1.LabelPlacement:          p.Name,
					clusterv1alpha1.LabelDecisionGroupIndex: strconv.Itoa(gi),
					clusterv1alpha1.LabelDecisionGroupName:  g.Name,
				},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: clusterv1alpha1.GroupVersion.String(), Kind: "Placement",
					Name: p.Name, UID: p.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
			}}
			for _, c := range g.Clusters[start:min(start+clusterv1alpha1.MaxDecisionsPerObject, len(g.Clusters))] {
				d.Status.Decisions = append(d.Status.Decisions, clusterv1alpha1.ClusterDecision{ClusterName: c, Reason: result.Reasons[c]})
			}
			objects = append(objects, d)
			statuses[gi].Decisions = append(statuses[gi].Decisions, d.Name)
		}
	}
	return objects, statuses
}

// writeDecisions brings the Placement's PlacementDecisions to desired: it creates or updates those that
// differ and deletes those no longer wanted, and says whether it wrote anything.
func (r *Controller) writeDecisions(ctx context.Context, desired, current []*clusterv1alpha1.PlacementDecision) (bool, error) {
	byName := map[string]*clusterv1alpha1.PlacementDecision{}
	for _, d := range current {
		byName[d.Name] = d
	}
	changed := false
	for _, want := range desired {
		have := byName[want.Name]
		delete(byName, want.Name)
		if have == nil || !maps.Equal(have.Labels, want.Labels) {
			u, err := scheme.ApplyObject(r.Client, want, map[string]any{"metadata": map[string]any{
				"labels": want.Labels, "ownerReferences": []any{map[string]any{
					"apiVersion": want.OwnerReferences[0].APIVersion, "kind": want.OwnerReferences[0].Kind,
					"name": want.OwnerReferences[0].Name, "uid": string(want.OwnerReferences[0].UID),
					"controller": true, "blockOwnerDeletion": true,
				}},
			}})
			if err != nil {
				return changed, err
			}
			if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
				return changed, err
			}
			changed = true
		}
		if have == nil || !slices.Equal(have.Status.Decisions, want.Status.Decisions) {
			if err := r.applyDecisions(ctx, want); err != nil {
				return changed, err
			}
			changed = true
		}
	}
	for _, stale := range byName {
		if err := r.Client.Delete(ctx, stale, client.Preconditions{UID: &stale.UID}); client.IgnoreNotFound(err) != nil {
			return changed, err
		}
		changed = true
	}
	return changed, nil
}

// applyDecisions applies a PlacementDecision's status.decisions, always as a list, empty when the group has no
// cluster: applied as an empty status (what scheme.ApplyStatus sends for it), the hub refused the write and
// the group kept the cluster that had left.
func (r *Controller) applyDecisions(ctx context.Context, d *clusterv1alpha1.PlacementDecision) error {
	decisions := make([]any, len(d.Status.Decisions))
	for i, c := range d.Status.Decisions {
		decisions[i] = map[string]any{"clusterName": c.ClusterName, "reason": c.Reason}
	}
	u, err := scheme.ApplyObject(r.Client, d, map[string]any{"status": map[string]any{"decisions": decisions}})
	if err != nil {
		return err
	}
	return r.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldManager), client.ForceOwnership)
}

// writeStatus applies the Placement's status when it differs from what it says now.
func (r *Controller) writeStatus(ctx context.Context, p *clusterv1alpha1.Placement, selected int32,
	groups []clusterv1alpha1.DecisionGroupStatus, conditions ...*metav1.Condition) error {
	want := clusterv1alpha1.PlacementStatus{NumberOfSelectedClusters: selected, DecisionGroups: groups, Conditions: slices.Clone(p.Status.Conditions)}
	for _, c := range conditions {
		if c != nil {
			meta.SetStatusCondition(&want.Conditions, *c)
		}
	}
	if equality.Semantic.DeepEqual(want, p.Status) {
		return nil
	}
	return client.IgnoreNotFound(scheme.ApplyStatus(ctx, r.Client, p, fieldManager, &want))
}
