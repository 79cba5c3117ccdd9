package devenv

import (
	"context"
	"fmt"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
	"sigs.k8s.io/kwok/kustomize/stage/node/fast"
	heartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	kwokclient "sigs.k8s.io/kwok/pkg/client/clientset/versioned"
	"sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/kwok/pkg/kwok/controllers"
	"sigs.k8s.io/kwok/pkg/utils/client"
)

// nodeLeaseSeconds is the lease duration kwok keeps for each node. Without node leases the node lifecycle
// controller would mark kwok's nodes NotReady after its grace period and evict their pods.
const nodeLeaseSeconds = 40

// simulatedNodeAnnotation marks the nodes kwok plays the kubelet for.
const simulatedNodeAnnotation = "kwok.x-k8s.io/node"

// nodeSpec is the shape of every simulated node.
type nodeSpec struct {
	cpu, memory resource.Quantity
	pods        int
}

// ensureNodes creates the member's simulated nodes that do not exist yet. Existing nodes are left as they
// are, so a restarted member keeps its nodes and the pods bound to them.
func ensureNodes(ctx context.Context, kube kubernetes.Interface, member string, count int, spec nodeSpec) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    spec.cpu,
		corev1.ResourceMemory: spec.memory,
		corev1.ResourcePods:   *resource.NewQuantity(int64(spec.pods), resource.DecimalSI),
	}
	for i := range count {
		name := fmt.Sprintf("%s-node-%d", member, i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{simulatedNodeAnnotation: "fake"},
				Labels: map[string]string{
					"kubernetes.io/hostname": name,
					"kubernetes.io/os":       "linux",
					"kubernetes.io/arch":     "amd64",
					"type":                   "kwok",
				},
			},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}
		if _, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating node %s: %w", name, err)
		}
	}
	return nil
}

// startKubelets starts kwok, which plays the kubelet for every simulated node: it keeps the nodes Ready and
// their leases fresh, runs bound pods to Running and Ready with a pod IP, and completes their deletion.
func startKubelets(ctx context.Context, kubeconfig, identity, member string) error {
	stages, err := defaultStages()
	if err != nil {
		return err
	}
	clients, err := client.NewClientset("", kubeconfig)
	if err != nil {
		return err
	}
	restConfig, err := clients.ToRESTConfig()
	if err != nil {
		return err
	}
	dynamicClient, err := clients.ToDynamicClient()
	if err != nil {
		return err
	}
	mapper, err := clients.ToRESTMapper()
	if err != nil {
		return err
	}
	restClient, err := rest.RESTClientFor(restConfig)
	if err != nil {
		return err
	}
	typedConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	typedConfig.QPS, typedConfig.Burst = 500, 1000
	typed, err := kubernetes.NewForConfig(typedConfig)
	if err != nil {
		return err
	}
	kwokTyped, err := kwokclient.NewForConfig(typedConfig)
	if err != nil {
		return err
	}
	ctr, err := controllers.NewController(controllers.Config{
		Clock:                      clock.RealClock{},
		DynamicClient:              dynamicClient,
		RESTClient:                 restClient,
		RESTMapper:                 mapper,
		ImpersonatingDynamicClient: clients.ToImpersonatingDynamicClient(),
		ImpersonatingTypedClient:   clients.ToImpersonatingTypedClient(),
		TypedClient:                typed,
		TypedKwokClient:            kwokTyped,
		ManageAllNodes:             true,
		CIDR:                       podCIDR(member),
		NodeIP:                     "10.0.0.1",
		LocalStages:                stages,
		PodPlayStageParallelism:    8,
		NodePlayStageParallelism:   4,
		NodeLeaseParallelism:       4,
		NodeLeaseDurationSeconds:   nodeLeaseSeconds,
		PodsOnNodeSyncParallelism:  2,
		ID:                         identity,
	})
	if err != nil {
		return fmt.Errorf("kwok: %w", err)
	}
	return ctr.Start(ctx)
}

// defaultStages are kwok's fast node and pod lifecycles, with node heartbeats through leases.
func defaultStages() (map[internalversion.StageResourceRef][]*internalversion.Stage, error) {
	out := map[internalversion.StageResourceRef][]*internalversion.Stage{}
	for _, raw := range []string{fast.DefaultNodeInit, heartbeat.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady, podfast.DefaultPodComplete, podfast.DefaultPodDelete} {
		stage, err := config.UnmarshalWithType[*internalversion.Stage](raw)
		if err != nil {
			return nil, fmt.Errorf("kwok stage: %w", err)
		}
		out[stage.Spec.ResourceRef] = append(out[stage.Spec.ResourceRef], stage)
	}
	return out, nil
}

// podCIDR is the range kwok gives the member's pod IPs: one /16 in 10.64.0.0-10.191.255.255 chosen by the
// member's name. Members must not share pod IPs: a multi-cluster Service imports one member's pod IPs into
// another, which, as on real clusters, needs pod ranges that do not overlap.
func podCIDR(member string) string {
	h := fnv.New32a()
	h.Write([]byte(member))
	return fmt.Sprintf("10.%d.0.0/16", 64+h.Sum32()%128)
}
