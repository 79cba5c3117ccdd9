package quota

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

const (
	// LabelQuotaNamespace and LabelQuotaName on a Work name the FederatedResourceQuota whose static assignment
	// it carries to a member.
	LabelQuotaNamespace = "policy.flotilla.io/quota-namespace"
	LabelQuotaName      = "policy.flotilla.io/quota-name"
	// Finalizer keeps a FederatedResourceQuota until the Works of its static assignments are gone, and with
	// them the member ResourceQuotas: deleting the quota asks for exactly that.
	Finalizer = "policy.flotilla.io/quota"
)

// WorkName names the Work of a quota's static assignment in its cluster's namespace:
// NAMESPACE.NAME.federatedresourcequota. A binding's Work name ends in a part with a dash (its kind, or a
// hash), so the two never meet.
func WorkName(namespace, name string) string {
	n := namespace + "." + name + ".federatedresourcequota"
	if len(n) <= validation.DNS1123SubdomainMaxLength {
		return n
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	return fmt.Sprintf("%s.%016x.federatedresourcequota", namespace, h.Sum64())
}

// memberQuota is the ResourceQuota a static assignment becomes in its member: the quota's namespace and name,
// the assignment's hard. It is encoded as the API server returns it (sorted keys, canonical quantities, no
// empty fields), so an unchanged Work reads back equal and is not written again.
func memberQuota(q *policyv1alpha1.FederatedResourceQuota, hard corev1.ResourceList) ([]byte, error) {
	quantities := map[string]any{}
	for name, v := range hard {
		quantities[string(name)] = v.String()
	}
	return json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ResourceQuota",
		"metadata": map[string]any{"namespace": q.Namespace, "name": q.Name}, "spec": map[string]any{"hard": quantities}})
}

// Works tells the hub's work sweeper which Works are FederatedResourceQuotas' (it is a binding.WorkOwner,
// which the hub hands binding.SetupSweeper): a quota's Work whose quota is gone (its finalizer removed by hand)
// is released like a binding's.
type Works struct{}

// Kind names FederatedResourceQuotas in the sweeper's events.
func (Works) Kind() string { return "FederatedResourceQuota" }

// New returns an empty FederatedResourceQuota.
func (Works) New() client.Object { return &policyv1alpha1.FederatedResourceQuota{} }

// Of returns the quota a Work's labels name.
func (Works) Of(w *workv1alpha1.Work) (client.ObjectKey, bool) {
	ns, name := w.Labels[LabelQuotaNamespace], w.Labels[LabelQuotaName]
	return client.ObjectKey{Namespace: ns, Name: name}, ns != "" && name != ""
}

// Labels are the labels of a quota's Works.
func (Works) Labels(q client.Object) map[string]string {
	return map[string]string{LabelQuotaNamespace: q.GetNamespace(), LabelQuotaName: q.GetName()}
}

// Owns says whether a quota claims a Work: one of a cluster it still assigns.
func (Works) Owns(q client.Object, w *workv1alpha1.Work) bool {
	frq, ok := q.(*policyv1alpha1.FederatedResourceQuota)
	if !ok {
		return false
	}
	cluster, _ := clusterv1alpha1.ClusterOfNamespace(w.Namespace)
	for _, a := range frq.Spec.StaticAssignments {
		if a.ClusterName == cluster {
			return true
		}
	}
	return false
}

// works lists a quota's Works.
func (r *Controller) works(ctx context.Context, q *policyv1alpha1.FederatedResourceQuota) ([]workv1alpha1.Work, error) {
	works := &workv1alpha1.WorkList{}
	err := r.Client.List(ctx, works, client.MatchingLabels(Works{}.Labels(q)))
	return works.Items, err
}

// ensureWork creates or changes the Work of one static assignment; nothing is written when nothing changed.
// It returns false when the cluster has no namespace on the hub (it is not joined).
func (r *Controller) ensureWork(ctx context.Context, q *policyv1alpha1.FederatedResourceQuota, a policyv1alpha1.StaticClusterAssignment) (bool, error) {
	raw, err := memberQuota(q, a.Hard)
	if err != nil {
		return false, err
	}
	want := workv1alpha1.WorkSpec{ConflictResolution: policyv1alpha1.ConflictAbort,
		Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}}
	work := &workv1alpha1.Work{}
	key := client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(a.ClusterName), Name: WorkName(q.Namespace, q.Name)}
	err = r.Client.Get(ctx, key, work)
	if apierrors.IsNotFound(err) {
		work = &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: Works{}.Labels(q), Finalizers: []string{workv1alpha1.FinalizerExecution}}, Spec: want}
		err = r.Client.Create(ctx, work, client.FieldOwner(fieldManager))
		if apierrors.IsNotFound(err) { // the cluster's namespace
			return false, nil
		}
		return true, client.IgnoreAlreadyExists(err)
	}
	if err != nil || equality.Semantic.DeepEqual(work.Spec, want) {
		return err == nil, err
	}
	patch := client.MergeFrom(work.DeepCopy())
	work.Spec = want
	return true, r.Client.Patch(ctx, work, patch, client.FieldOwner(fieldManager))
}
