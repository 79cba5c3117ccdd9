package hub

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// controllerManagerLease is the Lease a leader-electing kube-controller-manager renews in kube-system.
const controllerManagerLease = "kube-controller-manager"

// ErrRunsWorkloads says why the hub refuses a cluster of --kubeconfig that runs workloads.
var ErrRunsWorkloads = errors.New("templates applied on the hub would run there as real workloads: " +
	"a hub on an existing cluster needs one that only stores objects (no Nodes, no deployment controller). " +
	"To run the hub inside a cluster, install the charts/flotilla chart (a StatefulSet with its own embedded control plane); " +
	"give --allow-workloads to use this cluster anyway")

// CheckNoWorkloads returns an error wrapping ErrRunsWorkloads when the cluster of cfg runs workloads: it has
// Nodes, or a kube-controller-manager that renewed its leader Lease recently (its deployment controller
// would turn every Deployment template into Pods). An error reading either is returned as it is: it is
// never taken for "no workloads".
func CheckNoWorkloads(ctx context.Context, cfg *rest.Config) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return fmt.Errorf("--kubeconfig: checking whether the cluster runs workloads (listing Nodes): %w", err)
	}
	if len(nodes.Items) > 0 {
		return fmt.Errorf("--kubeconfig: the cluster has Nodes (%s, ...): %w", nodes.Items[0].Name, ErrRunsWorkloads)
	}
	lease, err := kube.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, controllerManagerLease, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("--kubeconfig: checking whether the cluster runs workloads (reading Lease kube-system/%s): %w", controllerManagerLease, err)
	}
	if renewed := lease.Spec.RenewTime; renewed != nil && ptr.Deref(lease.Spec.HolderIdentity, "") != "" {
		duration := time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, 15)) * time.Second
		// A controller manager that stopped long ago no longer acts; one whose lease is current does.
		if time.Since(renewed.Time) < 2*duration {
			return fmt.Errorf("--kubeconfig: a kube-controller-manager runs there (Lease kube-system/%s held by %s): %w",
				controllerManagerLease, *lease.Spec.HolderIdentity, ErrRunsWorkloads)
		}
	}
	return nil
}
