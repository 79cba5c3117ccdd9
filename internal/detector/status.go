package detector

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/selection"
)

// statusFieldManager owns the propagation policies' status, and nothing else of them.
var statusFieldManager = workv1alpha1.ControllerFieldManager("detector-status")

// Reasons of the Honoured condition.
const (
	ReasonHonoured        = "Honoured"
	ReasonKindNotServed   = "KindNotServed"
	ReasonNeverPropagated = "NeverPropagated"
	// ReasonDependentOverridesMissing: an override policy named in dependentOverrides does not exist.
	ReasonDependentOverridesMissing = "DependentOverridesMissing"
)

// setupStatus registers the controller that writes each propagation policy's status. It is woken through a
// channel: by the policy pass for every policy (a policy or CRD change), and by the template reconciler for
// the policies a claim moved between (so it never watches templates itself).
func (d *Detector) setupStatus(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("detector-policy-status").
		WatchesRawSource(source.Channel(d.statusEvents, policyStatusEvents(policyStatusDelay))).
		Complete(reconcile.Func(d.policyStatus))
}

// policyStatusDelay is how long a policy's status waits after a claim moved: a burst claims its templates one
// after another, and each claim changed the count of claimed templates, so the status was written about
// once every three templates; it is now written at most once per delay and policy, with every claim made
// meanwhile.
const policyStatusDelay = time.Second

// policyStatusEvents queues the policy of an event after delay; the queue keeps the earliest time a policy
// was added for, so the events within one delay wake it once.
func policyStatusEvents(delay time.Duration) handler.Funcs {
	return handler.Funcs{GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		q.AddAfter(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.Object)}, delay)
	}}
}

// notifyStatus wakes the status of policy p (a PropagationPolicy when p.Namespace is set); nil is no policy.
func (d *Detector) notifyStatus(ctx context.Context, p *Policy) {
	if p == nil {
		return
	}
	var obj client.Object = &policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: p.Name}}
	if !p.Cluster() {
		obj = &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
	}
	select {
	case d.statusEvents <- event.GenericEvent{Object: obj}:
	case <-ctx.Done():
	}
}

// samePolicy reports whether a and b name the same policy (either may be nil).
func samePolicy(a, b *Policy) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Namespace == b.Namespace && a.Name == b.Name
}

// policyStatus writes one policy's status: the templates it claims (from their claim labels) and whether
// every resource selector can be honoured. It writes only when that changed.
func (d *Detector) policyStatus(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var obj client.Object
	var spec *policyv1alpha1.PropagationSpec
	var status *policyv1alpha1.PropagationPolicyStatus
	if req.Namespace == "" {
		cpp := &policyv1alpha1.ClusterPropagationPolicy{}
		obj, spec, status = cpp, &cpp.Spec, &cpp.Status
	} else {
		pp := &policyv1alpha1.PropagationPolicy{}
		obj, spec, status = pp, &pp.Spec, &pp.Status
	}
	if err := d.client.Get(ctx, req.NamespacedName, obj); apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	if obj.GetDeletionTimestamp() != nil {
		return reconcile.Result{}, nil
	}
	claimed, err := d.claimedTemplates(ctx, Policy{Namespace: req.Namespace, Name: req.Name})
	if err != nil {
		return reconcile.Result{}, err
	}
	want := policyv1alpha1.PropagationPolicyStatus{ObservedGeneration: obj.GetGeneration(), ClaimedTemplates: int32(len(claimed)),
		Templates: claimed[:min(len(claimed), policyv1alpha1.MaxListedTemplates)], Conditions: slices.Clone(status.Conditions)}
	cond, err := d.honoured(ctx, Policy{Namespace: req.Namespace, Name: req.Name, Spec: spec})
	if err != nil {
		return reconcile.Result{}, err
	}
	cond.ObservedGeneration = obj.GetGeneration()
	meta.SetStatusCondition(&want.Conditions, cond)
	if equality.Semantic.DeepEqual(*status, want) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, client.IgnoreNotFound(scheme.ApplyStatus(ctx, d.client, obj, statusFieldManager, &want))
}

// claimedTemplates names the templates whose claim labels name p, where policies select them, sorted.
func (d *Detector) claimedTemplates(ctx context.Context, p Policy) ([]string, error) {
	labels := client.MatchingLabels{policyv1alpha1.LabelClusterPropagationPolicy: p.Name}
	if !p.Cluster() {
		labels = client.MatchingLabels{policyv1alpha1.LabelPropagationPolicyNamespace: p.Namespace, policyv1alpha1.LabelPropagationPolicyName: p.Name}
	}
	d.mu.Lock()
	selected := maps.Clone(d.selected)
	d.mu.Unlock()
	var names []string
	for _, gk := range slices.SortedFunc(maps.Keys(selected), func(a, b schema.GroupKind) int { return cmp.Compare(a.String(), b.String()) }) {
		s := selected[gk]
		namespaces := s.namespaces.UnsortedList()
		if !p.Cluster() {
			if !s.covers(p.Namespace) {
				continue
			}
			namespaces = []string{p.Namespace}
		}
		var these []string
		for _, namespace := range namespaces {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(s.gvk.GroupVersion().WithKind(s.gvk.Kind + "List"))
			if err := d.templates.List(ctx, list, labels, client.InNamespace(namespace)); err != nil {
				return nil, fmt.Errorf("listing %s: %w", gk, err)
			}
			for _, t := range list.Items {
				if t.GetNamespace() == "" {
					these = append(these, gk.String()+" "+t.GetName())
				} else {
					these = append(these, gk.String()+" "+t.GetNamespace()+"/"+t.GetName())
				}
			}
		}
		slices.Sort(these)
		names = append(names, these...)
	}
	return names, nil
}

// honoured is the Honoured condition of a policy: False, naming the selector, when one selects Flotilla's own
// kinds (never propagated) or a kind the hub does not serve (its templates wait until it does), naming them
// when dependent override policies are missing (its templates wait until they exist), and naming the
// PriorityClass of schedulePriority when it is missing (its templates are scheduled at priority 0).
func (d *Detector) honoured(ctx context.Context, p Policy) (metav1.Condition, error) {
	missing, err := d.missingOverrides(ctx, p)
	if err != nil {
		return metav1.Condition{}, err
	}
	if len(missing) > 0 {
		return metav1.Condition{Type: policyv1alpha1.ConditionHonoured, Status: metav1.ConditionFalse, Reason: ReasonDependentOverridesMissing,
			Message: fmt.Sprintf("dependentOverrides: %s not found; the templates wait until they exist", strings.Join(missing, ", "))}, nil
	}
	cond, err := d.priorityHonoured(ctx, p)
	if err != nil {
		return metav1.Condition{}, err
	}
	if cond != nil {
		return *cond, nil
	}
	return d.selectorsHonoured(p.Spec), nil
}

// selectorsHonoured is the Honoured condition as the resource selectors decide it.
func (d *Detector) selectorsHonoured(spec *policyv1alpha1.PropagationSpec) metav1.Condition {
	for i, s := range spec.ResourceSelectors {
		gv, err := schema.ParseGroupVersion(s.APIVersion)
		if err != nil {
			return metav1.Condition{Type: policyv1alpha1.ConditionHonoured, Status: metav1.ConditionFalse, Reason: ReasonKindNotServed,
				Message: fmt.Sprintf("resourceSelectors[%d]: apiVersion %q does not parse: %v", i, s.APIVersion, err)}
		}
		gk := gv.WithKind(s.Kind).GroupKind()
		if selection.FlotillaGroup(gk.Group) {
			return metav1.Condition{Type: policyv1alpha1.ConditionHonoured, Status: metav1.ConditionFalse, Reason: ReasonNeverPropagated,
				Message: fmt.Sprintf("resourceSelectors[%d]: %s is one of Flotilla's own kinds, which are never propagated", i, gk)}
		}
		if _, err := d.mapper.RESTMapping(gk); meta.IsNoMatchError(err) {
			return metav1.Condition{Type: policyv1alpha1.ConditionHonoured, Status: metav1.ConditionFalse, Reason: ReasonKindNotServed,
				Message: fmt.Sprintf("resourceSelectors[%d]: the hub does not serve %s %s; its templates are claimed once it does", i, s.APIVersion, s.Kind)}
		}
	}
	return metav1.Condition{Type: policyv1alpha1.ConditionHonoured, Status: metav1.ConditionTrue, Reason: ReasonHonoured,
		Message: "every resource selector selects a kind the hub serves"}
}
