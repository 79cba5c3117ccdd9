package mirror

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// +kubebuilder:rbac:groups=policy.karmada.io;autoscaling.karmada.io;config.karmada.io,resources=*,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.karmada.io;autoscaling.karmada.io;config.karmada.io,resources=*/status,verbs=update
// +kubebuilder:rbac:groups=policy.flotilla.io;autoscaling.flotilla.io;config.flotilla.io,resources=*,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Karmada is every Karmada kind the hub serves (hub --karmada-apis), with its Flotilla twin. Their CRDs are
// the twins' schemas under Karmada's group and kind (hack/peercrds).
var Karmada = []Kind{
	{Peer: karmadaPolicy("PropagationPolicy"), Twin: policyv1alpha1.GroupVersion.WithKind("PropagationPolicy"), Spec: adapted(karmadaFailover)},
	{Peer: karmadaPolicy("ClusterPropagationPolicy"), Twin: policyv1alpha1.GroupVersion.WithKind("ClusterPropagationPolicy"), Spec: adapted(karmadaFailover)},
	{Peer: karmadaPolicy("OverridePolicy"), Twin: policyv1alpha1.GroupVersion.WithKind("OverridePolicy")},
	{Peer: karmadaPolicy("ClusterOverridePolicy"), Twin: policyv1alpha1.GroupVersion.WithKind("ClusterOverridePolicy")},
	{Peer: karmadaPolicy("FederatedResourceQuota"), Twin: policyv1alpha1.GroupVersion.WithKind("FederatedResourceQuota")},
	{Peer: schema.GroupVersionKind{Group: autoscalingv1alpha1.KarmadaGroup, Version: "v1alpha1", Kind: "FederatedHPA"},
		Twin: autoscalingv1alpha1.GroupVersion.WithKind("FederatedHPA")},
	{Peer: schema.GroupVersionKind{Group: autoscalingv1alpha1.KarmadaGroup, Version: "v1alpha1", Kind: "CronFederatedHPA"},
		Twin: autoscalingv1alpha1.GroupVersion.WithKind("CronFederatedHPA")},
	{Peer: schema.GroupVersionKind{Group: configv1alpha1.KarmadaGroup, Version: "v1alpha1", Kind: "ResourceInterpreterCustomization"},
		Twin: configv1alpha1.GroupVersion.WithKind("InterpreterCustomization")},
	{Peer: schema.GroupVersionKind{Group: configv1alpha1.KarmadaGroup, Version: "v1alpha1", Kind: "ResourceInterpreterWebhookConfiguration"},
		Twin: configv1alpha1.GroupVersion.WithKind("InterpreterWebhookConfiguration"), Content: []string{"webhooks"}},
}

func karmadaPolicy(kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: policyv1alpha1.KarmadaGroup, Version: "v1alpha1", Kind: kind}
}

// karmadaFailover gives a policy written through Karmada's group Karmada's cluster failover: none unless
// spec.failover.cluster is set. Flotilla fails a binding over from a cluster that stays unreachable or not
// ready (the hub's default failover toleration) unless its placement tolerates the cluster's health taints
// itself; the twin of a Karmada policy without spec.failover.cluster tolerates both for ever. (A placementRef,
// which is Flotilla's, leaves tolerations to its Placement.)
func karmadaFailover(spec map[string]any) error {
	if _, set, err := unstructured.NestedMap(spec, "failover", "cluster"); err != nil || set {
		return err
	}
	if _, ref := spec["placementRef"]; ref {
		return nil // the Placement decides which taints are tolerated, and admission refuses a placement beside it
	}
	tolerations, _, err := unstructured.NestedSlice(spec, "placement", "clusterTolerations")
	if err != nil {
		return err
	}
	for _, key := range []string{clusterv1alpha1.TaintClusterUnreachable, clusterv1alpha1.TaintClusterNotReady} {
		tolerations = append(tolerations, map[string]any{"key": key, "operator": "Exists", "effect": "NoExecute"})
	}
	return unstructured.SetNestedSlice(spec, tolerations, "placement", "clusterTolerations")
}
