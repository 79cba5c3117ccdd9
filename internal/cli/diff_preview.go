package cli

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/binding"
	"github.com/flotilla-io/flotilla/internal/clusterset"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/override"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/selection"
)

// hubView reads the hub for flotilla diff; it writes nothing.
type hubView struct {
	client  client.Client
	dynamic dynamic.Interface
	mapper  meta.RESTMapper
}

// policySet is the propagation and override policies of the hub, before or after the change.
type policySet struct {
	propagation []selection.Propagation
	overrides   []override.Policy
}

// templatePair is a template before the change (nil: not on the hub yet) and after it. diff previews applies,
// not deletions, so a template is never missing after the change.
type templatePair struct {
	before, after *unstructured.Unstructured
}

// placement is where one version of a template goes and what each cluster receives.
type placement struct {
	policy    *selection.Propagation
	targets   []workv1alpha1.TargetCluster
	manifests map[string]string
	// note says why the placement is not the scheduler's own answer here; err why nothing could be placed.
	note string
	err  error
}

// templatePreview is what the change does to one template.
type templatePreview struct {
	name          string
	before, after placement
}

// preview runs the detector's choice, the scheduler and the overrides on the hub's policies before and after
// the changes, for every template the changes touch.
func (h *hubView) preview(ctx context.Context, changes []change) ([]templatePreview, error) {
	before, err := h.policies(ctx)
	if err != nil {
		return nil, err
	}
	after, err := before.with(changes)
	if err != nil {
		return nil, err
	}
	templates, order, err := h.touched(ctx, changes, before, after)
	if err != nil {
		return nil, err
	}
	clusters := &clusterv1alpha1.ClusterList{}
	if err := h.client.List(ctx, clusters); err != nil {
		return nil, fmt.Errorf("listing clusters: %w", err)
	}
	interp := interpreter.New(h.client)
	var out []templatePreview
	for _, key := range order {
		pair := templates[key]
		current, err := h.binding(ctx, key)
		if err != nil {
			return nil, err
		}
		p := templatePreview{name: describeObject(pair.after)}
		if p.before, err = h.place(ctx, interp, pair.before, before, current, clusters.Items, true); err != nil {
			return nil, err
		}
		if p.after, err = h.place(ctx, interp, pair.after, after, current, clusters.Items, false); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// policies lists every propagation and override policy of the hub.
func (h *hubView) policies(ctx context.Context) (policySet, error) {
	var s policySet
	pps, cpps := &policyv1alpha1.PropagationPolicyList{}, &policyv1alpha1.ClusterPropagationPolicyList{}
	ops, cops := &policyv1alpha1.OverridePolicyList{}, &policyv1alpha1.ClusterOverridePolicyList{}
	for _, list := range []client.ObjectList{pps, cpps, ops, cops} {
		if err := h.client.List(ctx, list); err != nil {
			return s, fmt.Errorf("listing policies: %w", err)
		}
	}
	for i := range pps.Items {
		s.propagation = append(s.propagation, selection.Propagation{Namespace: pps.Items[i].Namespace, Name: pps.Items[i].Name, Spec: &pps.Items[i].Spec})
	}
	for i := range cpps.Items {
		s.propagation = append(s.propagation, selection.Propagation{Name: cpps.Items[i].Name, Spec: &cpps.Items[i].Spec})
	}
	for i := range ops.Items {
		s.overrides = append(s.overrides, override.Policy{Namespace: ops.Items[i].Namespace, Name: ops.Items[i].Name, Spec: &ops.Items[i].Spec})
	}
	for i := range cops.Items {
		s.overrides = append(s.overrides, override.Policy{Name: cops.Items[i].Name, Spec: &cops.Items[i].Spec})
	}
	return s, nil
}

// policyKinds are the kinds of policy diff previews, by their Kind in policy.flotilla.io.
var policyKinds = map[string]bool{"PropagationPolicy": true, "ClusterPropagationPolicy": true, "OverridePolicy": true, "ClusterOverridePolicy": true}

func isPolicy(obj *unstructured.Unstructured) bool {
	return obj.GroupVersionKind().Group == policyv1alpha1.GroupVersion.Group && policyKinds[obj.GetKind()]
}

// with is the set with the changed policies in place of (or beside) the hub's.
func (s policySet) with(changes []change) (policySet, error) {
	out := policySet{propagation: slices.Clone(s.propagation), overrides: slices.Clone(s.overrides)}
	for _, c := range changes {
		if !isPolicy(c.after) {
			continue
		}
		ns, name := c.after.GetNamespace(), c.after.GetName()
		switch c.after.GetKind() {
		case "PropagationPolicy", "ClusterPropagationPolicy":
			spec := &policyv1alpha1.PropagationSpec{}
			if err := specOf(c.after, spec); err != nil {
				return out, err
			}
			out.propagation = slices.DeleteFunc(out.propagation, func(p selection.Propagation) bool { return p.Namespace == ns && p.Name == name })
			out.propagation = append(out.propagation, selection.Propagation{Namespace: ns, Name: name, Spec: spec})
		default:
			spec := &policyv1alpha1.OverrideSpec{}
			if err := specOf(c.after, spec); err != nil {
				return out, err
			}
			out.overrides = slices.DeleteFunc(out.overrides, func(p override.Policy) bool { return p.Namespace == ns && p.Name == name })
			out.overrides = append(out.overrides, override.Policy{Namespace: ns, Name: name, Spec: spec})
		}
	}
	return out, nil
}

func specOf(obj *unstructured.Unstructured, spec any) error {
	fields, _, err := unstructured.NestedMap(obj.Object, "spec")
	if err != nil {
		return fmt.Errorf("%s: %w", describeObject(obj), err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(fields, spec); err != nil {
		return fmt.Errorf("%s: %w", describeObject(obj), err)
	}
	return nil
}

// binding is the template's binding on the hub, nil when it has none.
func (h *hubView) binding(ctx context.Context, key objectKey) (workv1alpha1.Binding, error) {
	var b workv1alpha1.Binding = &workv1alpha1.ClusterResourceBinding{}
	if key.namespace != "" {
		b = &workv1alpha1.ResourceBinding{}
	}
	err := h.client.Get(ctx, client.ObjectKey{Namespace: key.namespace, Name: workv1alpha1.BindingName(key.gk, key.name)}, b)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return b, err
}

// place says where template t goes under the policies: now (current), the binding's placement as the hub
// holds it; after the change, the scheduler's answer when what the policy puts in the binding changed, and the
// binding's placement when it did not (the scheduler keeps a placement its input did not change).
func (h *hubView) place(ctx context.Context, interp *interpreter.Interpreter, t *unstructured.Unstructured, policies policySet,
	current workv1alpha1.Binding, clusters []clusterv1alpha1.Cluster, now bool) (placement, error) {
	var p placement
	if t == nil {
		return p, nil
	}
	if p.policy = selection.Choose(t, policies.propagation, selection.ClaimOf(t)); p.policy == nil {
		return p, nil
	}
	spec := p.policy.BindingSpec(t)
	if replicas, requirements, ok, err := interp.Requirements(ctx, t); err != nil {
		return p, fmt.Errorf("%s: %w", describeObject(t), err)
	} else if ok {
		spec.Replicas = replicas
		if requirements != nil {
			requirements.Namespace = t.GetNamespace()
			spec.ReplicaRequirements = requirements
		}
	}
	var status *workv1alpha1.ResourceBindingStatus
	if current != nil {
		spec.Clusters, status = current.BindingSpec().Clusters, current.BindingStatus()
	} else {
		status = &workv1alpha1.ResourceBindingStatus{}
	}
	switch {
	case current != nil && (now || unchangedInput(current.BindingSpec(), &spec)):
		p.targets = spec.Clusters
	case spec.PlacementRef != nil:
		p.targets, p.note = spec.Clusters, fmt.Sprintf("placed by the decisions of Placement %s, which diff does not preview", spec.PlacementRef.Name)
	case spec.SchedulerName != "" && spec.SchedulerName != policyv1alpha1.DefaultSchedulerName:
		p.targets, p.note = spec.Clusters, fmt.Sprintf("placed by scheduler %s, which diff does not preview", spec.SchedulerName)
	default:
		f, err := h.framework(ctx, t, p.policy)
		if err != nil {
			return p, err
		}
		result, err := f.ScheduleBinding(&spec, status, clusters)
		if err != nil {
			p.err = err
			return p, nil
		}
		p.targets = result.Clusters
	}
	spec.Clusters = p.targets
	p.manifests = map[string]string{}
	for _, target := range p.targets {
		m, err := binding.RenderInterpreted(ctx, interp, t, target, binding.Division(&spec))
		if err != nil {
			return p, fmt.Errorf("%s for cluster %s: %w", describeObject(t), target.Name, err)
		}
		if i := slices.IndexFunc(clusters, func(c clusterv1alpha1.Cluster) bool { return c.Name == target.Name }); i >= 0 {
			if _, err := override.Apply(m, &clusters[i], overridesOf(policies.overrides, t.GetNamespace())); err != nil {
				return p, fmt.Errorf("%s for cluster %s: %w", describeObject(t), target.Name, err)
			}
		}
		data, err := yaml.Marshal(m.Object)
		if err != nil {
			return p, err
		}
		p.manifests[target.Name] = string(data)
	}
	return p, nil
}

// unchangedInput reports whether a binding would get the same placement input it has: the policy's
// placement and the replicas with their requests.
func unchangedInput(current, want *workv1alpha1.ResourceBindingSpec) bool {
	return equality.Semantic.DeepEqual(current.Placement, want.Placement) && current.Replicas == want.Replicas &&
		equality.Semantic.DeepEqual(current.ReplicaRequirements, want.ReplicaRequirements)
}

// overridesOf are the override policies that apply in namespace, in the order they apply (as the binding
// controller lists them: every ClusterOverridePolicy, and the OverridePolicies of the namespace).
func overridesOf(all []override.Policy, namespace string) []override.Policy {
	var out []override.Policy
	for _, p := range all {
		if p.Namespace == "" || (namespace != "" && p.Namespace == namespace) {
			out = append(out, p)
		}
	}
	override.Sort(out)
	return out
}

// framework is the scheduler as the hub runs it for a binding of policy p: confined to the namespace's
// ClusterSets when a PropagationPolicy places it.
func (h *hubView) framework(ctx context.Context, t *unstructured.Unstructured, p *selection.Propagation) (*scheduler.Framework, error) {
	f := scheduler.Default()
	if t.GetNamespace() == "" || p.Cluster() {
		return f, nil
	}
	mode, err := clusterset.ReadMode(ctx, h.client)
	if err != nil {
		return nil, err
	}
	grant, err := clusterset.Lookup(ctx, h.client, t.GetNamespace(), mode)
	if err != nil {
		return nil, err
	}
	return f.Confined(grant), nil
}
