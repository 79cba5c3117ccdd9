package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// dynamicReader reads the kinds a check's warnings and Admit need through the embedded API server's loopback
// dynamic client (the client admission plugins are given), as a client.Reader: Flotilla's kinds and the
// cluster-set mode's ConfigMap typed (and the AddOn a ClusterAddOn names), and the workloads quotaCheck checks as unstructured objects.
type dynamicReader struct{ d dynamic.Interface }

// resourceOf is the resource of the objects and lists dynamicReader reads.
func resourceOf(obj runtime.Object) (schema.GroupVersionResource, error) {
	gv := clusterv1alpha1.GroupVersion
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		return corev1.SchemeGroupVersion.WithResource("configmaps"), nil
	case *addonv1alpha1.AddOn:
		return addonv1alpha1.GroupVersion.WithResource("addons"), nil
	case *clusterv1alpha1.Cluster, *clusterv1alpha1.ClusterList:
		return gv.WithResource("clusters"), nil
	case *clusterv1alpha1.ClusterSet, *clusterv1alpha1.ClusterSetList:
		return gv.WithResource("clustersets"), nil
	case *clusterv1alpha1.ClusterSetBinding, *clusterv1alpha1.ClusterSetBindingList:
		return gv.WithResource("clustersetbindings"), nil
	case *policyv1alpha1.FederatedResourceQuotaList:
		return policyv1alpha1.GroupVersion.WithResource("federatedresourcequotas"), nil
	case *workv1alpha1.ResourceBindingList:
		return workv1alpha1.GroupVersion.WithResource("resourcebindings"), nil
	case *unstructured.Unstructured:
		gvk := o.GroupVersionKind()
		for r, gk := range workloadKinds {
			if gk == gvk.GroupKind() {
				return r.WithVersion(gvk.Version), nil
			}
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("admission reads no %T", obj)
}

func (r dynamicReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	gvr, err := resourceOf(obj)
	if err != nil {
		return err
	}
	u, err := r.d.Resource(gvr).Namespace(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if out, ok := obj.(*unstructured.Unstructured); ok {
		out.Object = u.Object
		return nil
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj)
}

func (r dynamicReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gvr, err := resourceOf(list)
	if err != nil {
		return err
	}
	o := (&client.ListOptions{}).ApplyOptions(opts)
	var selector string
	if o.LabelSelector != nil {
		selector = o.LabelSelector.String()
	}
	raw := metav1.ListOptions{LabelSelector: selector}
	if o.Raw != nil {
		raw.ResourceVersion = o.Raw.ResourceVersion
	}
	ul, err := r.d.Resource(gvr).Namespace(o.Namespace).List(ctx, raw)
	if err != nil {
		return err
	}
	typed := make([]runtime.Object, 0, len(ul.Items))
	for i := range ul.Items {
		obj, err := newItem(list)
		if err != nil {
			return err
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(ul.Items[i].Object, obj); err != nil {
			return err
		}
		typed = append(typed, obj)
	}
	return meta.SetList(list, typed)
}

// newItem is an empty item of list's kind.
func newItem(list client.ObjectList) (runtime.Object, error) {
	switch list.(type) {
	case *clusterv1alpha1.ClusterList:
		return &clusterv1alpha1.Cluster{}, nil
	case *clusterv1alpha1.ClusterSetList:
		return &clusterv1alpha1.ClusterSet{}, nil
	case *clusterv1alpha1.ClusterSetBindingList:
		return &clusterv1alpha1.ClusterSetBinding{}, nil
	case *policyv1alpha1.FederatedResourceQuotaList:
		return &policyv1alpha1.FederatedResourceQuota{}, nil
	case *workv1alpha1.ResourceBindingList:
		return &workv1alpha1.ResourceBinding{}, nil
	}
	return nil, fmt.Errorf("admission reads no %T", list)
}
