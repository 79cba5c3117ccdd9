package registration

import (
	"context"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/members"
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

// JoinPush stores the member's credentials in a Secret and creates the Cluster (syncMode Push), its
// namespace and Lease. Joining the same member again updates the credentials. It runs where the kubeconfig
// was loaded: files it names are read here and embedded, so what the hub stores is self-contained; a
// kubeconfig that runs a command for its credentials is refused.
func JoinPush(ctx context.Context, c client.Client, r PushRequest) (*clusterv1alpha1.Cluster, error) {
	if msgs := validation.IsDNS1123Label(r.ClusterName); len(msgs) > 0 {
		return nil, fmt.Errorf("--cluster-name %q: %v", r.ClusterName, msgs)
	}
	if reason, taken, err := NameTaken(ctx, c, r.ClusterName, r.ClusterID, clusterv1alpha1.Push); err != nil {
		return nil, err
	} else if taken {
		return nil, fmt.Errorf("%s", reason)
	}
	cfg, err := selfContained(r.Kubeconfig)
	if err != nil {
		return nil, err
	}
	// The Cluster says how the member is reached; the stored kubeconfig keeps only who the hub is to it.
	member := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster]
	server, insecure, proxyURL := member.Server, member.InsecureSkipTLSVerify, member.ProxyURL
	member.InsecureSkipTLSVerify, member.ProxyURL = false, ""
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, err
	}
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-" + r.ClusterName, Namespace: clusterv1alpha1.SystemNamespace, Labels: map[string]string{LabelClusterName: r.ClusterName}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{members.SecretKeyKubeconfig: data},
	}
	if err := apply(ctx, c, secret); err != nil {
		return nil, err
	}
	return EnsureClusterObjects(ctx, c, &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: r.ClusterName, Labels: r.Labels},
		Spec: clusterv1alpha1.ClusterSpec{
			SyncMode: clusterv1alpha1.Push, ID: r.ClusterID, APIEndpoint: server,
			InsecureSkipTLSVerification: insecure, ProxyURL: proxyURL,
			SecretRef: &clusterv1alpha1.LocalSecretReference{Namespace: clusterv1alpha1.SystemNamespace, Name: secret.Name},
			Provider:  r.Provider, Region: r.Region, Zones: r.Zones,
		},
	})
}

// selfContained returns the current context of kubeconfig alone, with the files it names (certificates,
// keys, token file) read and embedded, and refuses one that needs a command or plugin for its credentials.
func selfContained(kubeconfig *clientcmdapi.Config) (*clientcmdapi.Config, error) {
	cfg := kubeconfig.DeepCopy()
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return nil, err
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, err
	}
	for _, user := range cfg.AuthInfos {
		if user.TokenFile != "" {
			token, err := os.ReadFile(user.TokenFile)
			if err != nil {
				return nil, fmt.Errorf("member kubeconfig: %w", err)
			}
			user.Token, user.TokenFile = strings.TrimSpace(string(token)), ""
		}
	}
	if err := members.ValidateKubeconfig(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}
