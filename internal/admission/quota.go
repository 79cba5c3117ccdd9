package admission

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/quota"
)

// workloadKinds are the kinds quotaCheck checks, by resource: the workloads whose replicas and requests the
// interpreter knows built in.
var workloadKinds = map[schema.GroupResource]schema.GroupKind{
	{Group: "apps", Resource: "deployments"}:  {Group: "apps", Kind: "Deployment"},
	{Group: "apps", Resource: "statefulsets"}: {Group: "apps", Kind: "StatefulSet"},
	{Group: "apps", Resource: "replicasets"}:  {Group: "apps", Kind: "ReplicaSet"},
	{Group: "batch", Resource: "jobs"}:        {Group: "batch", Kind: "Job"},
}

// quotaSpecCheck refuses a FederatedResourceQuota that contradicts itself: a static assignment that gives one
// cluster more than the fleet's overall, or a negative quantity, named by resource.
var quotaSpecCheck = Check{
	Name: "FlotillaFederatedResourceQuota",
	Resources: []schema.GroupResource{{Group: policyv1alpha1.GroupVersion.Group, Resource: "federatedresourcequotas"},
		{Group: policyv1alpha1.KarmadaGroup, Resource: "federatedresourcequotas"}},
	Validate: func(u *unstructured.Unstructured) (field.ErrorList, error) {
		q := &policyv1alpha1.FederatedResourceQuota{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, q); err != nil {
			return nil, err
		}
		return quota.ValidateSpec(&q.Spec), nil
	},
}

// quotaCheck refuses a workload's create, update or scale that would take its namespace's fleet-wide usage
// over a FederatedResourceQuota's spec.overall (internal/quota says what counts).
//
// The namespace's usage is its bindings' (templates a policy claimed: running, or about to), read from their
// spec (replicas, replicaRequirements), so the check interprets only the template being written, never the
// others. The template being written is counted whether or not a policy places it yet: the detector binds a
// template without passing admission, so this is the last point at which its author can be told; a template
// with no policy costs its namespace a share of the quota it does not use until one claims it. Its own
// binding is left out of the usage and its change counted in its place: on update or scale, what it asked
// before is replaced by what it asks now, as many times as its placement runs it.
//
// It checks the workload kinds the interpreter knows built in (Deployments, StatefulSets, ReplicaSets, Jobs)
// and their scale subresource. A kind taught by an InterpreterCustomization is counted in the quota's status
// from its bindings, but not refused at admission: a webhook over an existing cluster must name its
// resources in advance, and the in-process plugin follows the same rule.
var quotaCheck = Check{
	Name:         "FlotillaFleetQuota",
	Resources:    slices.SortedFunc(maps.Keys(workloadKinds), func(a, b schema.GroupResource) int { return strings.Compare(a.String(), b.String()) }),
	Subresources: []string{"scale"},
	Admit:        admitQuota,
}

// admitQuota is quotaCheck's review. An update that asks for no more replicas and the same requests reads
// nothing (no change that asks no more is refused, quota.Exceeds): the detector's claim of a template and an
// edit of its labels or image cost its namespace no read. Other writes in namespaces without a
// FederatedResourceQuota cost one list of them.
func admitQuota(ctx context.Context, hub client.Reader, r Request) error {
	if r.Namespace == "" || asksNoMore(r) {
		return nil
	}
	quotas, err := readQuotas(ctx, hub, r.Namespace)
	if err != nil || len(quotas) == 0 {
		return err
	}
	before, after := r.OldObject, r.Object
	if r.Subresource == "scale" {
		// The Scale carries only the count: what each replica requests is the workload's.
		replicas, _, _ := unstructured.NestedInt64(r.Object.Object, "spec", "replicas")
		before = &unstructured.Unstructured{}
		before.SetGroupVersionKind(workloadKinds[r.Resource.GroupResource()].WithVersion(r.Resource.Version))
		if err := hub.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, before); err != nil {
			return fmt.Errorf("reading %s %s/%s to scale it: %w", r.Resource.Resource, r.Namespace, r.Name, err)
		}
		after = before.DeepCopy()
		interpreter.ReviseReplicas(after, int32(replicas))
	}
	replicas, requests, ok := interpreter.Replicas(after)
	if !ok {
		return nil
	}
	bindings := &workv1alpha1.ResourceBindingList{}
	if err := hub.List(ctx, bindings, client.InNamespace(r.Namespace)); err != nil {
		return fmt.Errorf("reading the ResourceBindings of namespace %s: %w", r.Namespace, err)
	}
	others, copies := usageBesides(bindings.Items, after)
	was := corev1.ResourceList{}
	if before != nil {
		n, req, _ := interpreter.Replicas(before)
		was = quota.Demand(n*copies, req)
	}
	now := quota.Demand(replicas*copies, requests)
	var refusals []string
	for _, q := range quotas {
		if excess := quota.Exceeds(q.Spec.Overall, others, was, now); len(excess) > 0 {
			parts := make([]string, len(excess))
			for i, e := range excess {
				parts[i] = e.String()
			}
			refusals = append(refusals, fmt.Sprintf("exceeds FederatedResourceQuota %s/%s: %s", q.Namespace, q.Name, strings.Join(parts, "; ")))
		}
	}
	if len(refusals) == 0 {
		return nil
	}
	return apierrors.NewForbidden(r.Resource.GroupResource(), r.Name, errors.New(strings.Join(refusals, "; ")))
}

// asksNoMore says whether r updates a workload without asking for more replicas or other requests per
// replica than it did. A scale is always checked: its old object is a Scale, without the requests.
func asksNoMore(r Request) bool {
	if r.OldObject == nil || r.Subresource != "" {
		return false
	}
	was, wasRequests, ok := interpreter.Replicas(r.OldObject)
	if !ok {
		return false
	}
	now, requests, ok := interpreter.Replicas(r.Object)
	return ok && now <= was && equality.Semantic.DeepEqual(requests, wasRequests)
}

// readQuotas lists a namespace's FederatedResourceQuotas, but those being deleted, from the API server's watch
// cache as it is (resourceVersion 0), as Kubernetes' own ResourceQuota admission reads quotas from an informer.
// A list at the latest version waits until that cache has caught up with etcd: during a burst of the
// controllers' writes each of a user's creates waited 0.5-1.5 s for it, five times the create's time on an
// idle hub. The price is a window of that cache's lag (milliseconds at rest) after a quota is created in
// which a write is checked without it; the bindings a quota is checked against are read at the latest
// version.
func readQuotas(ctx context.Context, hub client.Reader, namespace string) ([]policyv1alpha1.FederatedResourceQuota, error) {
	list := &policyv1alpha1.FederatedResourceQuotaList{}
	if err := hub.List(ctx, list, client.InNamespace(namespace), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}); err != nil {
		return nil, fmt.Errorf("reading the FederatedResourceQuotas of namespace %s: %w", namespace, err)
	}
	// One being deleted waits for its member ResourceQuotas to go: it caps nothing any more.
	return slices.DeleteFunc(list.Items, func(q policyv1alpha1.FederatedResourceQuota) bool { return q.DeletionTimestamp != nil }), nil
}

// usageBesides sums the demand of a namespace's bindings but the template's own, and says how many copies
// the template runs (its own binding's placement; 1 before it has one).
func usageBesides(bindings []workv1alpha1.ResourceBinding, template *unstructured.Unstructured) (corev1.ResourceList, int32) {
	gk := template.GroupVersionKind().GroupKind()
	var demands []corev1.ResourceList
	copies := int32(1)
	for i := range bindings {
		ref := bindings[i].Spec.Resource
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && gv.Group == gk.Group && ref.Kind == gk.Kind && ref.Name == template.GetName() {
			copies = quota.Copies(&bindings[i].Spec)
			continue
		}
		demands = append(demands, quota.BindingDemand(&bindings[i].Spec))
	}
	return quota.Add(demands...), copies
}
