package registration

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// PushRequest registers a cluster the hub reaches itself.
type PushRequest struct {
	ClusterName string
	// ClusterID identifies the member (its kube-system namespace UID).
	ClusterID string
	// Kubeconfig reaches the member; it is stored, flattened to one context, in a Secret on the hub.
	Kubeconfig *clientcmdapi.Config
	Labels     map[string]string
	Provider   string
	Region     string
	Zones      []string
}

// SecretNamespace holds the credentials of Push clusters.
const SecretNamespace = "flotilla-system"

// JoinPush stores the member's credentials in a Secret and creates the Cluster (syncMode Push), its
// namespace and Lease. Joining the same member again updates the credentials.
func JoinPush(ctx context.Context, c client.Client, r PushRequest) (*clusterv1alpha1.Cluster, error) {
	if msgs := validation.IsDNS1123Label(r.ClusterName); len(msgs) > 0 {
		return nil, fmt.Errorf("--cluster-name %q: %v", r.ClusterName, msgs)
	}
	if reason, taken, err := NameTaken(ctx, c, r.ClusterName, r.ClusterID, clusterv1alpha1.Push); err != nil {
		return nil, err
	} else if taken {
		return nil, fmt.Errorf("%s", reason)
	}
	cfg := r.Kubeconfig.DeepCopy()
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, err
	}
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return nil, err
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, err
	}
	server := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-" + r.ClusterName, Namespace: SecretNamespace, Labels: map[string]string{LabelClusterName: r.ClusterName}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"kubeconfig": data},
	}
	if err := apply(ctx, c, secret); err != nil {
		return nil, err
	}
	return EnsureClusterObjects(ctx, c, &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: r.ClusterName, Labels: r.Labels},
		Spec: clusterv1alpha1.ClusterSpec{
			SyncMode: clusterv1alpha1.Push, ID: r.ClusterID, APIEndpoint: server,
			SecretRef: &clusterv1alpha1.LocalSecretReference{Namespace: SecretNamespace, Name: secret.Name},
			Provider:  r.Provider, Region: r.Region, Zones: r.Zones,
		},
	})
}
