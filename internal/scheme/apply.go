package scheme

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ApplyObject is an object of obj's kind, namespace and name holding only fields (top-level fields such as
// "spec" or "status"): what a controller sends by server-side apply, so that it claims only the fields it
// owns.
func ApplyObject(c client.Client, obj client.Object, fields map[string]any) (*unstructured.Unstructured, error) {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: fields}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(obj.GetNamespace())
	u.SetName(obj.GetName())
	return u, nil
}

// ApplyStatus writes status, a pointer to a struct holding only the status fields manager owns, to obj's
// status subresource by server-side apply as manager, taking those fields over from any other manager. Each
// controller so claims only its own fields: conditions are a map-typed list keyed by type, and applying some
// condition types leaves the others to their owners; a field manager applied before and leaves out now is
// removed. Only obj's kind, namespace and name are read. A status apply never creates the object: when obj
// is gone the error is NotFound.
func ApplyStatus(ctx context.Context, c client.Client, obj client.Object, manager string, status any) error {
	fields, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
	if err != nil {
		return err
	}
	u, err := ApplyObject(c, obj, map[string]any{"status": fields})
	if err != nil {
		return err
	}
	return c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership)
}
