package controlplane

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
)

// HubControllers are the kube-controller-manager controllers a store of templates needs: no Deployment,
// ReplicaSet or Pod controller runs, so templates on the hub stay inert. The resource quota controller counts
// what the ResourceQuotas of cluster namespaces cap (the EndpointSlices members report), which the API server
// enforces only once counted; it watches through the garbage collector's informers.
var HubControllers = []string{
	names.NamespaceController,
	names.GarbageCollectorController,
	names.ResourceQuotaController,
	names.ServiceAccountTokenController,
	names.CertificateSigningRequestSigningController,
	names.CertificateSigningRequestCleanerController,
	names.BootstrapSignerController,
	names.TokenCleanerController,
	names.ClusterRoleAggregationController,
}

// runControllerManager runs kube-controller-manager with the given controllers until ctx ends. It talks to
// the API server with the client certificate in kubeconfig (and, unless SharedControllerCredentials, a
// service account per controller), signs CSRs with the cluster CA and service-account tokens with the
// control plane's key.
func runControllerManager(ctx context.Context, c *Config, pki PKI, kubeconfig string) error {
	s, err := kcmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		return fmt.Errorf("kube-controller-manager options: %w", err)
	}
	s.Generic.ClientConnection.Kubeconfig = kubeconfig
	s.Generic.Controllers = c.Controllers
	s.Generic.LeaderElection.LeaderElect = c.LeaderElect
	// The default 50 requests/s made a burst of 100 Deployments take ~20 s to become Available on a member:
	// every pod costs the deployment and replica-set controllers several writes. A control plane on one
	// machine is protected by the API server's priority and fairness, not by client limits.
	s.Generic.ClientConnection.QPS, s.Generic.ClientConnection.Burst = 500, 1000
	s.KubeCloudShared.UseServiceAccountCredentials = !c.SharedControllerCredentials
	s.SecureServing.BindPort = 0 // no serving port: health is the API server's business here
	s.SAController.ServiceAccountKeyFile = pki.ServiceAccountKey()
	s.SAController.RootCAFile = pki.CACert()
	s.CSRSigningController.ClusterSigningCertFile = pki.CACert()
	s.CSRSigningController.ClusterSigningKeyFile = pki.CAKey()
	if c.SigningDuration > 0 {
		s.CSRSigningController.ClusterSigningDuration = metav1.Duration{Duration: c.SigningDuration}
	}

	cfg, err := s.Config(ctx, kcmapp.KnownControllers(), kcmapp.ControllersDisabledByDefault(), kcmapp.ControllerAliases())
	if err != nil {
		return fmt.Errorf("kube-controller-manager options: %w", err)
	}
	return kcmapp.Run(ctx, cfg.Complete())
}
