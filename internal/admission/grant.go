package admission

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterset"
)

// clusterSetGrantCheck warns, without refusing, when a namespaced PropagationPolicy or OverridePolicy names
// a cluster that is in no ClusterSet bound to its namespace: the scheduler will not place there (and an
// override for it never applies). It reads the hub's mode as the scheduler does, so on a hub that requires
// bindings a namespace with none draws a warning for every name; when the mode cannot be read it warns only
// in a namespace with at least one binding (confined whatever the mode). A cluster that does not exist draws
// no warning here (the scheduler says so), nor does anything admission cannot read.
var clusterSetGrantCheck = Check{
	Name: "FlotillaClusterSetGrant",
	Resources: []schema.GroupResource{
		{Group: policyv1alpha1.GroupVersion.Group, Resource: "propagationpolicies"},
		{Group: policyv1alpha1.GroupVersion.Group, Resource: "overridepolicies"},
	},
	Warn: warnUngrantedClusters,
}

// namedClusters are the cluster names a policy lists: a PropagationPolicy's clusterAffinity and
// clusterAffinities, an OverridePolicy's rules' targetCluster.
func namedClusters(u *unstructured.Unstructured) []string {
	var names []string
	add := func(affinity map[string]any) {
		list, _, _ := unstructured.NestedStringSlice(affinity, "clusterNames")
		names = append(names, list...)
	}
	if a, found, _ := unstructured.NestedMap(u.Object, "spec", "placement", "clusterAffinity"); found {
		add(a)
	}
	groups, _, _ := unstructured.NestedSlice(u.Object, "spec", "placement", "clusterAffinities")
	rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "overrideRules")
	for _, g := range groups {
		if m, ok := g.(map[string]any); ok {
			add(m)
		}
	}
	for _, r := range rules {
		if m, ok := r.(map[string]any); ok {
			if a, found, _ := unstructured.NestedMap(m, "targetCluster"); found {
				add(a)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// warnUngrantedClusters returns a warning for each cluster the policy names that its namespace's bindings do
// not grant.
func warnUngrantedClusters(ctx context.Context, r client.Reader, u *unstructured.Unstructured) []string {
	names := namedClusters(u)
	if len(names) == 0 || u.GetNamespace() == "" {
		return nil
	}
	mode, err := clusterset.ReadMode(ctx, r)
	if err != nil {
		klog.V(2).InfoS("cluster-set mode unknown to admission; warning only in namespaces with a binding", "err", err)
		mode = clusterset.Open
	}
	grant, err := clusterset.Lookup(ctx, r, u.GetNamespace(), mode)
	if err != nil || !grant.Confined {
		if err != nil {
			klog.V(2).InfoS("cluster-set warning skipped", "namespace", u.GetNamespace(), "err", err)
		}
		return nil
	}
	var warnings []string
	for _, name := range names {
		cluster := &clusterv1alpha1.Cluster{}
		if err := r.Get(ctx, client.ObjectKey{Name: name}, cluster); err != nil {
			if !apierrors.IsNotFound(err) {
				klog.V(2).InfoS("cluster-set warning skipped", "cluster", name, "err", err)
			}
			continue
		}
		if !grant.Allows(cluster.Labels) {
			warnings = append(warnings, fmt.Sprintf("%s: the namespace's workloads are not placed there", grant.Refusal(name)))
		}
	}
	return warnings
}
