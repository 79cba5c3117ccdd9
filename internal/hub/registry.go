package hub

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	appsv1alpha1 "github.com/flotilla-io/flotilla/api/apps/v1alpha1"

	"github.com/flotilla-io/flotilla/internal/addon"
	"github.com/flotilla-io/flotilla/internal/autoscaling"
	"github.com/flotilla-io/flotilla/internal/binding"
	"github.com/flotilla-io/flotilla/internal/clusterset"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
	"github.com/flotilla-io/flotilla/internal/detector"
	"github.com/flotilla-io/flotilla/internal/execution"
	"github.com/flotilla-io/flotilla/internal/helmrelease"
	"github.com/flotilla-io/flotilla/internal/inventory"
	"github.com/flotilla-io/flotilla/internal/mcs"
	"github.com/flotilla-io/flotilla/internal/mirror"
	"github.com/flotilla-io/flotilla/internal/placement"
	"github.com/flotilla-io/flotilla/internal/proxy"
	"github.com/flotilla-io/flotilla/internal/quota"
	"github.com/flotilla-io/flotilla/internal/rebalancer"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/shard"
	"github.com/flotilla-io/flotilla/internal/tunnel"
)

// Controller is one of Flotilla's hub controllers. Setup registers it with the manager; it runs only while
// this hub leads, except the per-cluster ones under --shard (Settings.Group), which run on every replica for
// the clusters it owns.
type Controller struct {
	// Name is what --controllers calls it.
	Name string
	// Setup adds the controller to the manager.
	Setup func(mgr ctrl.Manager, s Settings) error
}

// Settings are what controllers may need to know about the hub they run in.
type Settings struct {
	*Options
	// Identity names this hub process (leases it renews for Push clusters say so).
	Identity string
	// HubID names the hub, the same for all its processes; the push executor marks member objects with it.
	HubID string
	// Version is Flotilla's version.
	Version string
	// Tunnels are the Pull clusters' tunnels this hub process holds.
	Tunnels *tunnel.Registry
	// Templates are the hub's watches of templates, which the detector keeps where policies select them and
	// bindings exist; the controllers read templates through them. Without the detector nothing is watched,
	// and templates are read from the API server.
	Templates *detector.Templates
	// HubURL is the hub's address for members, as agents reach it.
	HubURL string
	// Group is this hub process's member of the shard group with --shard; nil without: then the per-cluster
	// controllers run on the leader, for every cluster.
	Group *shard.Group
}

// Registry is the ordered set of controllers a hub can run.
type Registry []Controller

// Controllers is every controller the hub knows, in start order. A new controller is added here, and
// nowhere else.
var Controllers = Registry{
	{Name: "registration", Setup: func(mgr ctrl.Manager, s Settings) error {
		return registration.SetupApprover(mgr, s.RequireApproval, s.MaxAgentCertTTL)
	}},
	{Name: "deregistration", Setup: func(mgr ctrl.Manager, _ Settings) error { return registration.SetupDeregistration(mgr) }},
	{Name: "addon-push-credentials", Setup: func(mgr ctrl.Manager, s Settings) error {
		return registration.SetupPushAddOnCredentials(mgr, s.MaxAgentCertTTL)
	}},
	{Name: "cluster-health", Setup: func(mgr ctrl.Manager, s Settings) error {
		return clusterstatus.SetupHealthMonitor(mgr, s.ClusterGracePeriod, s.Failover, s.Group)
	}},
	{Name: "push-status", Setup: func(mgr ctrl.Manager, s Settings) error {
		return clusterstatus.SetupPushReporter(mgr, "hub:"+s.Identity, s.Version)
	}},
	{Name: "tunnel-status", Setup: func(mgr ctrl.Manager, s Settings) error {
		return clusterstatus.SetupTunnelStatus(mgr, s.Tunnels)
	}},
	{Name: "clusterset", Setup: func(mgr ctrl.Manager, _ Settings) error { return clusterset.Setup(mgr) }},
	{Name: "detector", Setup: func(mgr ctrl.Manager, s Settings) error { return detector.Setup(mgr, s.Templates) }},
	{Name: "scheduler", Setup: func(mgr ctrl.Manager, s Settings) error {
		return scheduler.Setup(mgr, s.DefaultFailoverToleration, s.DescheduleAfter, s.Templates)
	}},
	{Name: "binding", Setup: func(mgr ctrl.Manager, s Settings) error {
		return binding.Setup(mgr, s.Templates, s.Group, expanders(mgr, s))
	}},
	{Name: "binding-status", Setup: func(mgr ctrl.Manager, s Settings) error { return binding.SetupStatus(mgr, s.Templates) }},
	{Name: "work-sweeper", Setup: func(mgr ctrl.Manager, s Settings) error {
		owners := []binding.WorkOwner{mcs.ConsumerWorks{}, quota.Works{}, addon.Works{}}
		if s.OCMAPIs {
			owners = append(owners, mirror.ManifestWorks{})
		}
		return binding.SetupSweeper(mgr, owners...)
	}},
	{Name: "push-execution", Setup: func(mgr ctrl.Manager, s Settings) error { return execution.SetupPush(mgr, s.HubID, s.Group) }},
	{Name: "work-release", Setup: func(mgr ctrl.Manager, _ Settings) error { return execution.SetupRelease(mgr) }},
	{Name: "rebalancer", Setup: func(mgr ctrl.Manager, _ Settings) error { return rebalancer.Setup(mgr) }},
	{Name: "federated-quota", Setup: func(mgr ctrl.Manager, _ Settings) error { return quota.Setup(mgr) }},
	{Name: "multicluster", Setup: func(mgr ctrl.Manager, _ Settings) error { return mcs.Setup(mgr) }},
	{Name: "multicluster-push-collector", Setup: func(mgr ctrl.Manager, _ Settings) error { return mcs.SetupPushCollector(mgr) }},
	{Name: "inventory", Setup: func(mgr ctrl.Manager, _ Settings) error { return inventory.Setup(mgr) }},
	{Name: "placement", Setup: func(mgr ctrl.Manager, _ Settings) error { return placement.Setup(mgr) }},
	{Name: "karmada-mirror", Setup: func(mgr ctrl.Manager, s Settings) error {
		if !s.KarmadaAPIs {
			return nil
		}
		return mirror.Setup(mgr, "karmada", mirror.Karmada)
	}},
	{Name: "ocm-mirror", Setup: func(mgr ctrl.Manager, s Settings) error {
		if !s.OCMAPIs {
			return nil
		}
		return errors.Join(mirror.Setup(mgr, "ocm", mirror.OCM), mirror.SetupDecisions(mgr))
	}},
	{Name: "federatedhpa", Setup: func(mgr ctrl.Manager, s Settings) error {
		return autoscaling.SetupFederatedHPA(mgr, memberBackends(mgr, s))
	}},
	{Name: "cronfederatedhpa", Setup: func(mgr ctrl.Manager, _ Settings) error { return autoscaling.SetupCronFederatedHPA(mgr) }},
	{Name: "addon", Setup: func(mgr ctrl.Manager, s Settings) error { return addon.Setup(mgr, s.HubURL) }},
	{Name: "clusteraddon", Setup: func(mgr ctrl.Manager, _ Settings) error { return addon.SetupCluster(mgr) }},
}

// memberBackends reach members as the proxy does, for the controllers that read members' APIs: Push members
// with their stored credentials, Pull members through the tunnels this hub process holds.
func memberBackends(mgr ctrl.Manager, s Settings) proxy.Backends {
	b := proxy.Backends{Push: proxy.NewPushBackend(mgr.GetAPIReader())}
	if s.Tunnels != nil {
		b.Pull = &proxy.PullBackend{Tunnels: s.Tunnels}
	}
	return b
}

// Names lists the registered controller names.
func (r Registry) Names() []string {
	names := make([]string, len(r))
	for i, c := range r {
		names[i] = c.Name
	}
	return names
}

// Select resolves a --controllers list, kube-controller-manager style: "*" is every controller, "name"
// enables one, "-name" disables one. An unknown name is an error.
func (r Registry) Select(spec []string) (Registry, error) {
	enabled := map[string]bool{}
	all := false
	for _, s := range spec {
		s = strings.TrimSpace(s)
		name, off := strings.CutPrefix(s, "-")
		switch {
		case s == "*":
			all = true
			continue
		case !slices.Contains(r.Names(), name):
			return nil, fmt.Errorf("--controllers: unknown controller %q (known: %s)", name, strings.Join(r.Names(), ", "))
		}
		enabled[name] = !off
	}
	var out Registry
	for _, c := range r {
		on, named := enabled[c.Name]
		if on || (all && !named) {
			out = append(out, c)
		}
	}
	return out, nil
}

// expanders are the template kinds the render controller expands on the hub: a HelmRelease into its chart's
// objects. ConfigMaps holding charts and Clusters are read past the cache (one read per cluster rendered),
// so that the hub caches no ConfigMap of the fleet's namespaces for them.
func expanders(mgr ctrl.Manager, s Settings) map[schema.GroupKind]binding.Expander {
	fetcher := &helmrelease.Fetcher{AllowLoopback: s.AllowLocalChartRepositories}
	return map[schema.GroupKind]binding.Expander{
		appsv1alpha1.HelmReleaseKind: &helmrelease.Expander{Client: mgr.GetAPIReader(), Mapper: mgr.GetRESTMapper(), Fetcher: fetcher},
	}
}
