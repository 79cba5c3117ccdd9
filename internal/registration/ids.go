package registration

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ClusterID returns a member's identity: the UID of its kube-system namespace, read when the member joins
// (pull or push) and recorded as the Cluster's spec.id. It tells a name registered to another member apart
// from the same member joining again (NameTaken, the approver), and internal/members checks it each time
// the hub reaches a push member. It is not secret, so it proves nothing on its own.
func ClusterID(ctx context.Context, member kubernetes.Interface) (string, error) {
	ns, err := member.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("member cluster unreachable: %w", err)
	}
	return string(ns.UID), nil
}

// ClusterInfoHubID is the key of the hub's ID in its cluster-info ConfigMap.
const ClusterInfoHubID = "hub-id"

// HubID returns the hub's ID: the UID of the kube-system namespace of the hub's API server. Flotilla's
// executors name it in the mark they put on member objects (execution/mark.go), so that two hubs sharing a
// member never take each other's objects for their own. It is the same for every replica of a hub (they share
// its etcd) and across restarts, unlike the process identity in a hub's data directory, and it is new for
// another hub, as a member's cluster ID is for another member. It is not secret.
func HubID(ctx context.Context, c client.Reader) (string, error) {
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ns); err != nil {
		return "", fmt.Errorf("reading the hub's ID (the UID of namespace %s): %w", metav1.NamespaceSystem, err)
	}
	if ns.UID == "" {
		return "", fmt.Errorf("reading the hub's ID: namespace %s has no UID", metav1.NamespaceSystem)
	}
	return string(ns.UID), nil
}

// PublishedHubID is the agent's end of HubID: the ID the hub publishes in its cluster-info, read with the
// agent's identity. It is empty when the hub publishes none, a hub older than the ID: its cluster-info has no
// such key, or agents may not read it (Forbidden). Any other error is returned.
func PublishedHubID(ctx context.Context, hub client.Reader) (string, error) {
	cm := &corev1.ConfigMap{}
	err := hub.Get(ctx, client.ObjectKey{Namespace: ClusterInfoNamespace, Name: ClusterInfoName}, cm)
	if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the hub's ID from %s/%s: %w", ClusterInfoNamespace, ClusterInfoName, err)
	}
	return cm.Data[ClusterInfoHubID], nil
}
