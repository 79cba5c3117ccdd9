package helmchart

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/charts"
	"github.com/flotilla-io/flotilla/internal/install"
)

// AgentObjects renders the agent chart for release in namespace.
func AgentObjects(release, namespace string, v install.AgentValues) ([]*unstructured.Unstructured, error) {
	c, err := Load(charts.Agent)
	if err != nil {
		return nil, err
	}
	return Render(c, release, namespace, v.Values())
}

// InstallAgent applies the agent chart's objects to the member of cfg with server-side apply, creating
// namespace first when it is missing (and leaving it to UninstallAgent's caller: a namespace is never
// deleted without being asked). With dryRun ([All]) the member's API server checks every write and persists
// none; the objects of a namespace that does not exist yet cannot be checked then, and progress says so.
func InstallAgent(ctx context.Context, cfg *rest.Config, release, namespace string, v install.AgentValues, dryRun []string, progress func(string)) error {
	objs, err := AgentObjects(release, namespace, v)
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	suffix := ""
	if len(dryRun) > 0 {
		suffix = " (server dry run)"
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	err = c.Create(ctx, ns, &client.CreateOptions{DryRun: dryRun})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s in the member: %w", namespace, err)
	}
	missing := err == nil && len(dryRun) > 0
	if err == nil {
		progress(fmt.Sprintf("created Namespace %s%s", namespace, suffix))
	}
	for _, obj := range objs {
		if missing && obj.GetNamespace() != "" {
			progress(fmt.Sprintf("not checked: %s %s (namespace %s does not exist yet)", obj.GetKind(), objectName(obj), namespace))
			continue
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(install.FieldManager), client.ForceOwnership,
			&client.ApplyOptions{DryRun: dryRun}); err != nil {
			return fmt.Errorf("applying %s %s to the member: %w", obj.GetKind(), obj.GetName(), err)
		}
		progress(fmt.Sprintf("applied %s %s%s", obj.GetKind(), objectName(obj), suffix))
	}
	return nil
}

// UninstallAgent deletes from the member of cfg the objects of the agent chart's release in namespace: the
// kinds the chart renders, selected by the chart's release labels, and nothing else. It returns what it
// deleted. With dryRun ([All]) the member's API server checks each delete and persists none.
func UninstallAgent(ctx context.Context, cfg *rest.Config, release, namespace string, dryRun []string) ([]string, error) {
	// The kinds come from the chart itself, rendered with placeholder values.
	objs, err := AgentObjects(release, namespace, install.AgentValues{
		HubURL: "https://hub:6443", CACertHashes: []string{"sha256:0"}, ClusterName: "placeholder", Token: "placeholder", CertTTL: time.Hour,
	})
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	selector := labels.SelectorFromSet(install.ReleaseLabels(release))
	seen := map[schema.GroupVersionKind]bool{}
	var deleted []string
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		if seen[gvk] {
			continue
		}
		seen[gvk] = true
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		opts := []client.ListOption{client.MatchingLabelsSelector{Selector: selector}}
		if obj.GetNamespace() != "" {
			opts = append(opts, client.InNamespace(namespace))
		}
		if err := c.List(ctx, list, opts...); err != nil {
			return deleted, fmt.Errorf("listing the agent's %s in the member: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			item := &list.Items[i]
			if err := c.Delete(ctx, item, client.PropagationPolicy(metav1.DeletePropagationBackground), &client.DeleteOptions{DryRun: dryRun}); client.IgnoreNotFound(err) != nil {
				return deleted, fmt.Errorf("deleting %s %s from the member: %w", item.GetKind(), objectName(item), err)
			}
			deleted = append(deleted, item.GetKind()+" "+objectName(item))
		}
	}
	return deleted, nil
}

func objectName(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}
