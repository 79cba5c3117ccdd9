// Package inventory publishes the fleet for other tools: one SIG-Multicluster ClusterProfile per Cluster, in
// the namespace of the Cluster's exclusive ClusterSet, written only when what it says changed.
package inventory

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	inventoryv1alpha1 "github.com/flotilla-io/flotilla/api/inventory/v1alpha1"
)

// Reasons of the conditions Flotilla sets on a ClusterProfile. ControlPlaneHealthy carries the reason of the
// Cluster's Ready condition when it has one.
const (
	// ReasonNotReported: the Cluster has no Ready condition yet.
	ReasonNotReported = "NotReported"
	// ReasonJoined: the Cluster is registered with the hub.
	ReasonJoined = "Joined"
	// ReasonDeregistering: the Cluster is deleted and leaves the hub.
	ReasonDeregistering = "Deregistering"
)

// ClusterSetOf is the exclusive ClusterSet a Cluster is in: the value of its clusterv1alpha1.LabelClusterSet
// label, or the built-in default set when it has none (or an empty one).
func ClusterSetOf(cluster *clusterv1alpha1.Cluster) string {
	if set := cluster.Labels[clusterv1alpha1.LabelClusterSet]; set != "" {
		return set
	}
	return clusterv1alpha1.ClusterSetDefault
}

// NamespaceOf is the namespace of a Cluster's ClusterProfile, or an error when its set's name cannot make a
// namespace name (a set name with dots, or longer than 43 characters).
func NamespaceOf(cluster *clusterv1alpha1.Cluster) (string, error) {
	set := ClusterSetOf(cluster)
	ns := inventoryv1alpha1.ClusterSetNamespace(set)
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return "", fmt.Errorf("ClusterSet %q makes no valid namespace name %q: %s", set, ns, strings.Join(errs, "; "))
	}
	return ns, nil
}

// Desired is the ClusterProfile Flotilla publishes for cluster in namespace ns: its labels, owner, spec and
// status, all computed from the Cluster alone so that the same Cluster always gives the same profile (the
// conditions' transition times are those of the Cluster's).
func Desired(cluster *clusterv1alpha1.Cluster, ns string) *inventoryv1alpha1.ClusterProfile {
	set := ClusterSetOf(cluster)
	return &inventoryv1alpha1.ClusterProfile{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns,
			Name:      cluster.Name,
			Labels: map[string]string{
				inventoryv1alpha1.LabelClusterManager: inventoryv1alpha1.ClusterManagerName,
				inventoryv1alpha1.LabelClusterSet:     set,
				clusterv1alpha1.LabelClusterSet:       set,
			},
			OwnerReferences: []metav1.OwnerReference{ownerOf(cluster)},
		},
		Spec: inventoryv1alpha1.ClusterProfileSpec{
			DisplayName:    cluster.Name,
			ClusterManager: inventoryv1alpha1.ClusterManager{Name: inventoryv1alpha1.ClusterManagerName},
		},
		Status: inventoryv1alpha1.ClusterProfileStatus{
			Conditions: []metav1.Condition{controlPlaneHealthy(cluster), joined(cluster)},
			Version:    inventoryv1alpha1.ClusterVersion{Kubernetes: cluster.Status.KubernetesVersion},
			Properties: properties(cluster, set),
		},
	}
}

// ownerOf makes the Cluster the profile's controller, so the garbage collector deletes the profile once the
// Cluster is gone (a namespaced object may have a cluster-scoped owner).
func ownerOf(cluster *clusterv1alpha1.Cluster) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: clusterv1alpha1.GroupVersion.String(), Kind: "Cluster",
		Name: cluster.Name, UID: cluster.UID, Controller: ptr.To(true),
	}
}

// controlPlaneHealthy mirrors the Cluster's Ready condition: the hub's judgement of the member's readyz and
// heartbeat.
func controlPlaneHealthy(cluster *clusterv1alpha1.Cluster) metav1.Condition {
	ready := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	if ready == nil {
		return metav1.Condition{Type: inventoryv1alpha1.ConditionControlPlaneHealthy, Status: metav1.ConditionUnknown,
			Reason: ReasonNotReported, Message: "the cluster has not reported its health yet", LastTransitionTime: cluster.CreationTimestamp}
	}
	return metav1.Condition{Type: inventoryv1alpha1.ConditionControlPlaneHealthy, Status: ready.Status,
		Reason: ready.Reason, Message: ready.Message, LastTransitionTime: ready.LastTransitionTime}
}

// joined is True while the Cluster is registered, False once it is deleted and leaves the hub.
func joined(cluster *clusterv1alpha1.Cluster) metav1.Condition {
	if cluster.DeletionTimestamp != nil {
		return metav1.Condition{Type: inventoryv1alpha1.ConditionJoined, Status: metav1.ConditionFalse,
			Reason: ReasonDeregistering, Message: "the cluster is leaving the hub", LastTransitionTime: *cluster.DeletionTimestamp}
	}
	return metav1.Condition{Type: inventoryv1alpha1.ConditionJoined, Status: metav1.ConditionTrue,
		Reason: ReasonJoined, Message: "the cluster is registered with the hub", LastTransitionTime: cluster.CreationTimestamp}
}

// properties are the cluster's set and, those it has, its region, zones and provider, sorted by name.
func properties(cluster *clusterv1alpha1.Cluster, set string) []inventoryv1alpha1.Property {
	values := map[string]string{
		inventoryv1alpha1.PropertyClusterSet: set,
		inventoryv1alpha1.PropertyRegion:     cluster.Spec.Region,
		inventoryv1alpha1.PropertyZones:      strings.Join(cluster.Spec.Zones, ","),
		inventoryv1alpha1.PropertyProvider:   cluster.Spec.Provider,
	}
	var out []inventoryv1alpha1.Property
	for _, name := range slices.Sorted(maps.Keys(values)) {
		if values[name] != "" {
			out = append(out, inventoryv1alpha1.Property{Name: name, Value: values[name]})
		}
	}
	return out
}

// ObjectUpToDate says whether current already carries desired's labels, owner and spec (other labels and
// owners may be there too).
func ObjectUpToDate(current, desired *inventoryv1alpha1.ClusterProfile) bool {
	for k, v := range desired.Labels {
		if current.Labels[k] != v {
			return false
		}
	}
	owner := desired.OwnerReferences[0]
	owned := slices.ContainsFunc(current.OwnerReferences, func(o metav1.OwnerReference) bool {
		return o.UID == owner.UID && o.Kind == owner.Kind && o.Name == owner.Name && o.Controller != nil && *o.Controller
	})
	return owned && current.Spec == desired.Spec
}

// StatusUpToDate says whether current's status already says what desired's does: the same version, the same
// properties and the same conditions Flotilla sets (status, reason and message; a transition time alone is
// no news).
func StatusUpToDate(current, desired *inventoryv1alpha1.ClusterProfile) bool {
	if current.Status.Version != desired.Status.Version ||
		!slices.EqualFunc(current.Status.Properties, desired.Status.Properties, func(a, b inventoryv1alpha1.Property) bool {
			return a.Name == b.Name && a.Value == b.Value
		}) {
		return false
	}
	for _, want := range desired.Status.Conditions {
		got := meta.FindStatusCondition(current.Status.Conditions, want.Type)
		if got == nil || got.Status != want.Status || got.Reason != want.Reason || got.Message != want.Message {
			return false
		}
	}
	return true
}
