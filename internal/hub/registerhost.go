package hub

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// registerHost registers the cluster of --kubeconfig, which the hub runs on, as the Push member
// o.RegisterHost: the hub reaches it with the same kubeconfig, stored like any push member's.
func (h *Hub) registerHost(ctx context.Context, o *Options, progress func(string)) error {
	loader := &clientcmd.ClientConfigLoadingRules{ExplicitPath: o.Kubeconfig}
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loader, &clientcmd.ConfigOverrides{CurrentContext: o.Context}).RawConfig()
	if err != nil {
		return fmt.Errorf("--register-host: %w", err)
	}
	if o.Context != "" {
		raw.CurrentContext = o.Context
	}
	kube, err := kubernetes.NewForConfig(h.Config)
	if err != nil {
		return err
	}
	id, err := registration.ClusterID(ctx, kube)
	if err != nil {
		return err
	}
	c, err := client.New(h.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	cluster, err := registration.JoinPush(ctx, c, registration.PushRequest{ClusterName: o.RegisterHost, ClusterID: id, Kubeconfig: &raw})
	if err != nil {
		return fmt.Errorf("--register-host %s: %w", o.RegisterHost, err)
	}
	progress(fmt.Sprintf("the host cluster is registered as %s (push mode, %s)", cluster.Name, cluster.Spec.APIEndpoint))
	return nil
}
