package dashboard

import (
	"context"
	"errors"
	"fmt"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// cachedKinds are the kinds the hub's controllers keep in their cache, which the dashboard reads from there
// (without managedFields, which no page shows), with the resource a review asks about for each.
var cachedKinds = map[schema.GroupKind]schema.GroupResource{
	{Group: clusterv1alpha1.GroupVersion.Group, Kind: "Cluster"}:                 {Group: clusterv1alpha1.GroupVersion.Group, Resource: "clusters"},
	{Group: coordinationv1.GroupName, Kind: "Lease"}:                             {Group: coordinationv1.GroupName, Resource: "leases"},
	{Group: workv1alpha1.GroupVersion.Group, Kind: "ResourceBinding"}:            {Group: workv1alpha1.GroupVersion.Group, Resource: "resourcebindings"},
	{Group: workv1alpha1.GroupVersion.Group, Kind: "ClusterResourceBinding"}:     {Group: workv1alpha1.GroupVersion.Group, Resource: "clusterresourcebindings"},
	{Group: workv1alpha1.GroupVersion.Group, Kind: "Work"}:                       {Group: workv1alpha1.GroupVersion.Group, Resource: "works"},
	{Group: policyv1alpha1.GroupVersion.Group, Kind: "PropagationPolicy"}:        {Group: policyv1alpha1.GroupVersion.Group, Resource: "propagationpolicies"},
	{Group: policyv1alpha1.GroupVersion.Group, Kind: "ClusterPropagationPolicy"}: {Group: policyv1alpha1.GroupVersion.Group, Resource: "clusterpropagationpolicies"},
}

// cachedReads reads the cached kinds from the hub's cache, and every other kind (events, templates) through
// Client, which impersonates the person. A cached read is made only when may says the person may get or
// list that resource in that namespace, the same question the API server would have asked: RBAC grants
// reads per resource and namespace (and name), never per field or label, so the cache gives them exactly
// what a read as themselves would. A read with a field selector goes to the API server, which indexes
// fields the cache does not.
type cachedReads struct {
	client.Client
	cache client.Reader
	may   func(ctx context.Context, verb string, gr schema.GroupResource, namespace, name string) (bool, error)
}

// typed knows the Go types of the cached kinds.
var typed = scheme.New()

// cachedResource says which resource obj (an object or a list) is, if it is of a cached kind and of its Go
// type. Unstructured and metadata-only reads go to the API server: the cache would start a watch of its own
// for them.
func cachedResource(obj runtime.Object) (schema.GroupResource, bool) {
	switch obj.(type) {
	case runtime.Unstructured, *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return schema.GroupResource{}, false
	}
	gvk, err := apiutil.GVKForObject(obj, typed)
	if err != nil {
		return schema.GroupResource{}, false
	}
	gr, ok := cachedKinds[schema.GroupKind{Group: gvk.Group, Kind: strings.TrimSuffix(gvk.Kind, "List")}]
	return gr, ok
}

func (c *cachedReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gr, ok := cachedResource(obj)
	if !ok {
		return c.Client.Get(ctx, key, obj, opts...)
	}
	if err := c.authorize(ctx, "get", gr, key.Namespace, key.Name); err != nil {
		return err
	}
	err := c.cache.Get(ctx, key, obj, opts...)
	if errors.As(err, new(*cache.ErrCacheNotStarted)) {
		return c.Client.Get(ctx, key, obj, opts...) // the hub's controllers are still starting
	}
	return err
}

func (c *cachedReads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	gr, ok := cachedResource(list)
	o := (&client.ListOptions{}).ApplyOptions(opts)
	if !ok || o.FieldSelector != nil {
		return c.Client.List(ctx, list, opts...)
	}
	if err := c.authorize(ctx, "list", gr, o.Namespace, ""); err != nil {
		return err
	}
	err := c.cache.List(ctx, list, opts...)
	if errors.As(err, new(*cache.ErrCacheNotStarted)) {
		return c.Client.List(ctx, list, opts...)
	}
	return err
}

// authorize answers as the API server would when the person may not verb the resource there.
func (c *cachedReads) authorize(ctx context.Context, verb string, gr schema.GroupResource, namespace, name string) error {
	allowed, err := c.may(ctx, verb, gr, namespace, name)
	if err != nil {
		return err
	}
	if !allowed {
		where := "at the cluster scope"
		if namespace != "" {
			where = "in the namespace " + namespace
		}
		return apierrors.NewForbidden(gr, name, fmt.Errorf("you may not %s %s %s", verb, gr, where))
	}
	return nil
}
