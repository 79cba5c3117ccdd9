package controlplane

import (
	"context"
	"fmt"
	"path/filepath"

	schedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	scheduleroptions "k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// schedulerConfig is kube-scheduler's configuration: its default profile, its own client identity, and no
// leader election (one scheduler per control plane).
const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: 500
  burst: 1000
leaderElection:
  leaderElect: false
`

// runScheduler runs kube-scheduler until ctx ends.
func runScheduler(ctx context.Context, pki PKI, kubeconfig string) error {
	configFile := filepath.Join(pki.Dir, "scheduler.yaml")
	if err := writeFileAtomic(configFile, fmt.Appendf(nil, schedulerConfig, kubeconfig), 0o600); err != nil {
		return err
	}
	opts := scheduleroptions.NewOptions()
	opts.ConfigFile = configFile
	opts.SecureServing.BindPort = 0 // no serving port: health is the API server's business here
	cc, sched, err := schedulerapp.Setup(ctx, opts)
	if err != nil {
		return fmt.Errorf("kube-scheduler setup: %w", err)
	}
	return schedulerapp.Run(ctx, cc, sched)
}
