package mirror

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ocmworkv1 "github.com/flotilla-io/flotilla/api/ocm/work/v1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// +kubebuilder:rbac:groups=work.open-cluster-management.io,resources=manifestworks,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=work.open-cluster-management.io,resources=manifestworks/status,verbs=update
// +kubebuilder:rbac:groups=work.flotilla.io,resources=works,verbs=get;list;watch;create;update;delete

// LabelManifestWorkNamespace on the Work of an OCM ManifestWork is the ManifestWork's namespace (its
// cluster's OCM namespace); the Work has the ManifestWork's name. The work sweeper finds a ManifestWork's
// Work by it (ManifestWorks).
const LabelManifestWorkNamespace = "mirror.flotilla.io/manifestwork-namespace"

// ManifestWork is OCM's ManifestWork with its twin, the Work of the same name in the Flotilla namespace of the
// cluster its namespace is named after, which the executor of that cluster (its agent, or the hub for a Push
// cluster) applies as it applies every Work. The Work carries the execution finalizer, as a binding's Works
// do, so deleting the ManifestWork deletes the member objects its deleteOption does not keep.
var ManifestWork = Kind{Peer: ocmworkv1.GroupVersion.WithKind("ManifestWork"), Twin: workv1alpha1.GroupVersion.WithKind("Work"),
	Spec: typed(workSpec), Status: typedStatus(manifestWorkStatus), TwinNamespace: clusterNamespaceOf,
	Labels: func(peer client.Object) map[string]string {
		return map[string]string{LabelManifestWorkNamespace: peer.GetNamespace()}
	},
	Finalizers: []string{workv1alpha1.FinalizerExecution}}

// workSpec is the Work of a ManifestWork: the same manifests and manifest configs, its deleteOption, and
// conflictResolution Overwrite, since OCM's agent takes over an object that exists in the cluster (Flotilla
// records it as adopted, and so releases rather than deletes it when the Work lets go). A manifest without
// an updateStrategy is applied by Flotilla's forced server-side apply, where OCM would use Update.
func workSpec(_ context.Context, _ client.Reader, mw *ocmworkv1.ManifestWork) (*workv1alpha1.WorkSpec, error) {
	spec := &workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: mw.Spec.Workload.Manifests},
		ConflictResolution: policyv1alpha1.ConflictOverwrite}
	for i, c := range mw.Spec.ManifestConfigs {
		config := workv1alpha1.ManifestConfig{ResourceIdentifier: resourceSelector(c.ResourceIdentifier)}
		if u := c.UpdateStrategy; u != nil {
			config.UpdateStrategy = &workv1alpha1.UpdateStrategy{Type: workv1alpha1.UpdateStrategyType(u.Type)}
			if config.UpdateStrategy.Type == "" {
				config.UpdateStrategy.Type = workv1alpha1.UpdateUpdate // OCM's default
			}
			if ssa := u.ServerSideApply; ssa != nil && config.UpdateStrategy.Type == workv1alpha1.UpdateServerSideApply {
				manager, ok := fieldManager(ssa.FieldManager)
				if !ok {
					return nil, refuse("manifestConfigs[%d]: fieldManager %q does not start with work-agent", i, ssa.FieldManager)
				}
				config.UpdateStrategy.ServerSideApply = &workv1alpha1.ServerSideApplyConfig{Force: ptr.To(ssa.Force), FieldManager: manager}
			}
		}
		for _, r := range c.FeedbackRules {
			rule := workv1alpha1.FeedbackRule{Type: workv1alpha1.FeedbackRuleType(r.Type)}
			for _, p := range r.JsonPaths {
				rule.JSONPaths = append(rule.JSONPaths, workv1alpha1.JSONPath{Name: p.Name, Path: p.Path})
			}
			config.FeedbackRules = append(config.FeedbackRules, rule)
		}
		spec.ManifestConfigs = append(spec.ManifestConfigs, config)
	}
	if d := mw.Spec.DeleteOption; d != nil {
		switch d.PropagationPolicy {
		case ocmworkv1.DeletePropagationOrphan:
			spec.DeleteOption = &workv1alpha1.DeleteOption{PropagationPolicy: workv1alpha1.DeletePropagationOrphan}
		case ocmworkv1.DeletePropagationSelectivelyOrphan:
			spec.DeleteOption = &workv1alpha1.DeleteOption{PropagationPolicy: workv1alpha1.DeletePropagationSelectivelyOrphan}
			if s := d.SelectivelyOrphan; s != nil {
				for _, r := range s.OrphaningRules {
					spec.DeleteOption.OrphaningRules = append(spec.DeleteOption.OrphaningRules, resourceSelector(r))
				}
			}
		}
	}
	return spec, nil
}

func resourceSelector(r ocmworkv1.ResourceIdentifier) workv1alpha1.ResourceSelector {
	return workv1alpha1.ResourceSelector{Group: r.Group, Resource: r.Resource, Namespace: r.Namespace, Name: r.Name}
}

// fieldManager is OCM's field manager as Flotilla's: work-agent (OCM's default) is flotilla, and
// work-agent-SUFFIX (or work-agentSUFFIX) flotilla-SUFFIX.
func fieldManager(ocm string) (string, bool) {
	suffix, ok := strings.CutPrefix(ocm, "work-agent")
	if !ok && ocm != "" {
		return "", false
	}
	if suffix = strings.TrimPrefix(suffix, "-"); suffix == "" {
		return "", true // Flotilla's default, flotilla
	}
	return workv1alpha1.FieldManager + "-" + suffix, true
}

// manifestWorkStatus is a Work's status in OCM's words: its Applied and Available conditions, Degraded when
// an object is unhealthy, and per manifest its object, feedback values and conditions (Applied, Available
// when the object is healthy, StatusFeedbackSynced). Observed generations are the Work's, not the
// ManifestWork's, and are left out.
func manifestWorkStatus(in *workv1alpha1.WorkStatus) *ocmworkv1.ManifestWorkStatus {
	out := &ocmworkv1.ManifestWorkStatus{}
	for _, t := range []string{workv1alpha1.WorkConditionApplied, workv1alpha1.WorkConditionAvailable} {
		if c := meta.FindStatusCondition(in.Conditions, t); c != nil {
			c := *c
			c.ObservedGeneration = 0
			out.Conditions = append(out.Conditions, c)
		}
	}
	var unhealthy []string
	for _, s := range in.ManifestStatuses {
		id := s.Identifier
		mc := ocmworkv1.ManifestCondition{ResourceMeta: ocmworkv1.ManifestResourceMeta{Ordinal: int32(id.Ordinal), Group: id.Group,
			Version: id.Version, Kind: id.Kind, Resource: id.Resource, Name: id.Name, Namespace: id.Namespace},
			StatusFeedbacks: ocmworkv1.StatusFeedbackResult{Values: s.Feedback}}
		if c := meta.FindStatusCondition(s.Conditions, workv1alpha1.WorkConditionApplied); c != nil {
			mc.Conditions = append(mc.Conditions, *c)
			available := metav1.Condition{Type: workv1alpha1.WorkConditionAvailable, Status: metav1.ConditionUnknown,
				Reason: string(s.Health), Message: "the object's health in the cluster", LastTransitionTime: c.LastTransitionTime}
			switch s.Health {
			case workv1alpha1.ResourceHealthy:
				available.Status = metav1.ConditionTrue
			case workv1alpha1.ResourceUnhealthy:
				available.Status = metav1.ConditionFalse
				unhealthy = append(unhealthy, id.Kind+" "+id.Name)
			}
			if available.Reason == "" {
				available.Reason = string(workv1alpha1.ResourceUnknown)
			}
			mc.Conditions = append(mc.Conditions, available)
		}
		if c := meta.FindStatusCondition(s.Conditions, workv1alpha1.ManifestConditionFeedbackSynced); c != nil {
			mc.Conditions = append(mc.Conditions, *c)
		}
		out.ResourceStatus.Manifests = append(out.ResourceStatus.Manifests, mc)
	}
	if applied := meta.FindStatusCondition(in.Conditions, workv1alpha1.WorkConditionApplied); applied != nil {
		degraded := metav1.Condition{Type: "Degraded", Status: metav1.ConditionFalse, Reason: "Healthy",
			Message: "no object is unhealthy", LastTransitionTime: applied.LastTransitionTime}
		if len(unhealthy) > 0 {
			degraded.Status, degraded.Reason, degraded.Message = metav1.ConditionTrue, "Unhealthy", "unhealthy: "+strings.Join(unhealthy, ", ")
		}
		out.Conditions = append(out.Conditions, degraded)
	}
	return out
}

// ManifestWorks names the ManifestWork a Work was written for, for the work sweeper (binding.SetupSweeper),
// which releases Works whose owner is gone.
type ManifestWorks struct{}

// Kind names the owner kind.
func (ManifestWorks) Kind() string { return "ManifestWork" }

// New returns an empty ManifestWork.
func (ManifestWorks) New() client.Object {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ManifestWork.Peer)
	return u
}

// Of returns the ManifestWork a Work's label names: of the Work's name, in the labelled namespace.
func (ManifestWorks) Of(w *workv1alpha1.Work) (client.ObjectKey, bool) {
	ns := w.Labels[LabelManifestWorkNamespace]
	return client.ObjectKey{Namespace: ns, Name: w.Name}, ns != ""
}

// Labels are the labels of the Works of a ManifestWork's namespace.
func (ManifestWorks) Labels(owner client.Object) map[string]string {
	return map[string]string{LabelManifestWorkNamespace: owner.GetNamespace()}
}

// Owns says whether a ManifestWork claims a Work: the one marked as its twin.
func (ManifestWorks) Owns(owner client.Object, w *workv1alpha1.Work) bool {
	m := &Mirror{Kind: ManifestWork}
	return m.owns(owner, w)
}
