// Package clusterset confines namespaces to the ClusterSets bound to them: which Clusters a namespace's
// policies may place on (Grant), the built-in sets, and the status of sets and their bindings.
package clusterset

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Mode says where a namespace with no ClusterSetBinding may place. A namespace with at least one binding is
// always confined to its sets, whatever the mode.
type Mode string

const (
	// RequireBindings: a namespace with no ClusterSetBinding places nowhere. The default of a new hub.
	RequireBindings Mode = "RequireBindings"
	// Open: a namespace with no ClusterSetBinding places on any Cluster (a single-user fleet, and a hub
	// upgraded from before cluster sets until its administrator switches).
	Open Mode = "Open"
)

// Validate says whether m is a mode.
func (m Mode) Validate() error {
	if m != RequireBindings && m != Open {
		return fmt.Errorf("%q is not a cluster-set mode: want %s or %s", m, RequireBindings, Open)
	}
	return nil
}

// Grant is where one namespace's policies may place: anywhere (not Confined), or on the Clusters of Sets.
type Grant struct {
	Namespace string
	Confined  bool
	// Sets are the bound ClusterSets that exist; a binding to a missing set grants nothing.
	Sets []clusterv1alpha1.ClusterSet
}

// Unconfined is the grant of cluster-scoped policies (ClusterPropagationPolicy, ClusterOverridePolicy):
// admin objects, never confined.
var Unconfined = Grant{}

// Allows says whether the namespace may place on a Cluster with these labels.
func (g Grant) Allows(clusterLabels map[string]string) bool {
	if !g.Confined {
		return true
	}
	for i := range g.Sets {
		if g.Sets[i].Contains(clusterLabels) {
			return true
		}
	}
	return false
}

// Refusal says why the namespace may not place on cluster, in the words the scheduler, its events and
// flotilla explain use.
func (g Grant) Refusal(cluster string) string {
	return fmt.Sprintf("%s is in no ClusterSet bound to namespace %s", cluster, g.Namespace)
}

// Lookup reads where namespace may place: its ClusterSetBindings and the sets they name. An error reading
// either is returned, never read as "no binding" (which would confine, or under Open free, the namespace).
func Lookup(ctx context.Context, r client.Reader, namespace string, mode Mode) (Grant, error) {
	if namespace == "" {
		return Unconfined, nil
	}
	bindings := &clusterv1alpha1.ClusterSetBindingList{}
	if err := r.List(ctx, bindings, client.InNamespace(namespace)); err != nil {
		return Grant{}, fmt.Errorf("reading the ClusterSetBindings of namespace %s: %w", namespace, err)
	}
	g := Grant{Namespace: namespace, Confined: len(bindings.Items) > 0 || mode != Open}
	for i := range bindings.Items {
		set := clusterv1alpha1.ClusterSet{}
		err := r.Get(ctx, client.ObjectKey{Name: bindings.Items[i].Spec.ClusterSet}, &set)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return Grant{}, fmt.Errorf("reading ClusterSet %s bound to namespace %s: %w", bindings.Items[i].Spec.ClusterSet, namespace, err)
		}
		g.Sets = append(g.Sets, set)
	}
	return g, nil
}
