package hollow

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// Agent is a pull agent without a member cluster behind it. It joins through the real protocol
// (discovery, CSR, approval), renews its Lease every heartbeat and reads its Cluster every sixth (as a
// real agent does), reports a fixed status when it changes, and acknowledges its Works as applied and
// healthy, with its own credential and the access the hub gave it.
type Agent struct {
	// Name is its Cluster's.
	Name   string
	client client.Client
	works  cache.Cache
	queue  chan string

	mu      sync.Mutex
	healthy bool
	leases  *clusterstatus.LeaseRenewer
}

// mapper knows the few kinds a hollow agent uses, so that a thousand agents do not each read the hub's
// discovery.
func mapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(workv1alpha1.GroupVersion.WithKind("Work"), meta.RESTScopeNamespace)
	m.Add(clusterv1alpha1.GroupVersion.WithKind("Cluster"), meta.RESTScopeRoot)
	m.Add(coordinationv1.SchemeGroupVersion.WithKind("Lease"), meta.RESTScopeNamespace)
	return m
}

// Kinds is what every hollow agent's clients know of the hub's kinds, built once for all of them: a
// scheme and mapper of its own per agent cost about 1 MiB, which at 5,000 agents was most of the benchmark's
// memory.
type Kinds struct {
	scheme *runtime.Scheme
	mapper meta.RESTMapper
}

// NewKinds builds the kinds for any number of agents.
func NewKinds() Kinds { return Kinds{scheme: scheme.New(), mapper: mapper()} }

// Join joins one hollow agent, keeping its credential under dir, and returns it ready to start.
func Join(ctx context.Context, hub Access, dir, name string, kinds Kinds) (*Agent, error) {
	cred := registration.NewCredential(filepath.Join(dir, "agents", name))
	req := registration.JoinRequest{HubURL: hub.URL, Token: hub.Token, CACertHashes: hub.CAHashes,
		ClusterName: name, ClusterID: "hollow-" + name, Labels: LabelKey + "=" + LabelValue, CertTTL: 24 * time.Hour}
	if err := registration.Join(ctx, req, cred, func(string) {}); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cfg, err := cred.RESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 100, 200 // as the real agent
	c, err := client.New(cfg, client.Options{Scheme: kinds.scheme, Mapper: kinds.mapper})
	if err != nil {
		return nil, err
	}
	works, err := cache.New(cfg, cache.Options{Scheme: kinds.scheme, Mapper: kinds.mapper,
		DefaultNamespaces: map[string]cache.Config{clusterv1alpha1.ClusterNamespace(name): {}}})
	if err != nil {
		return nil, err
	}
	return &Agent{Name: name, client: c, works: works, queue: make(chan string, 1024), healthy: true,
		leases: &clusterstatus.LeaseRenewer{Hub: c, Cluster: name, Holder: "hollow-agent:" + name}}, nil
}

// Start reports once, then keeps the heartbeat and the Work acknowledgements going until ctx ends.
func (a *Agent) Start(ctx context.Context) error {
	if err := a.FirstHeartbeat(ctx); err != nil {
		return err
	}
	informer, err := a.works.GetInformer(ctx, &workv1alpha1.Work{})
	if err != nil {
		return err
	}
	enqueue := func(o any) {
		if w, ok := o.(*workv1alpha1.Work); ok {
			a.queue <- w.Name
		}
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) },
	}); err != nil {
		return err
	}
	go func() { _ = a.works.Start(ctx) }()
	go a.acknowledge(ctx)
	go func() {
		// Heartbeats of many agents spread over the period, as they would in a real fleet.
		timer := time.NewTimer(rand.N(clusterstatus.HeartbeatPeriod))
		defer timer.Stop()
		beats := 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
				_ = a.heartbeat(ctx, false)
				if beats++; beats%clusterstatus.StatusRereadEvery == 0 {
					// A real agent reads its Cluster again now and then.
					_ = a.client.Get(ctx, client.ObjectKey{Name: a.Name}, &clusterv1alpha1.Cluster{})
				}
				a.mu.Lock()
				period := a.leases.Period()
				a.mu.Unlock()
				timer.Reset(period)
			}
		}
	}()
	return nil
}

// FirstHeartbeat reports for the first time, retrying briefly: the access the hub granted at approval may
// take a moment to reach its authorizer.
func (a *Agent) FirstHeartbeat(ctx context.Context) error {
	err := retry.OnError(retry.DefaultBackoff, func(error) bool { return ctx.Err() == nil }, func() error { return a.heartbeat(ctx, true) })
	if err != nil {
		return fmt.Errorf("%s: first heartbeat: %w", a.Name, err)
	}
	return nil
}

// heartbeat renews the Lease, and writes the Cluster's status when report is set.
func (a *Agent) heartbeat(ctx context.Context, report bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.leases.Renew(ctx); err != nil || !report {
		return err
	}
	cluster := &clusterv1alpha1.Cluster{}
	if err := a.client.Get(ctx, client.ObjectKey{Name: a.Name}, cluster); err != nil {
		return err
	}
	original := cluster.DeepCopy()
	readyz := "ok"
	if !a.healthy {
		readyz = "[-]etcd failed: hollow agent reports unhealthy"
	}
	cluster.Status.KubernetesVersion = "v1.37.2"
	cluster.Status.Health = &clusterv1alpha1.HealthEndpoints{Livez: "ok", Readyz: readyz}
	cluster.Status.APIEnablements = []clusterv1alpha1.APIEnablement{
		{GroupVersion: "v1", Resources: []clusterv1alpha1.APIResource{{Name: "configmaps", Kind: "ConfigMap"}, {Name: "secrets", Kind: "Secret"}, {Name: "services", Kind: "Service"}}},
		{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
	}
	cluster.Status.ResourceSummary = &clusterv1alpha1.ResourceSummary{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("96"), corev1.ResourceMemory: resource.MustParse("768Gi"), corev1.ResourcePods: resource.MustParse("330"),
	}}
	// An agent may patch its Cluster's status, not replace it.
	return a.client.Status().Patch(ctx, cluster, client.MergeFrom(original))
}

// SetHealthy changes what the agent reports and reports it at once.
func (a *Agent) SetHealthy(ctx context.Context, healthy bool) error {
	a.mu.Lock()
	a.healthy = healthy
	a.mu.Unlock()
	return a.heartbeat(ctx, true)
}

// acknowledge reports each Work applied and healthy, with the status its workload would have, and lets go
// of deleted Works.
func (a *Agent) acknowledge(ctx context.Context) {
	for {
		var name string
		select {
		case <-ctx.Done():
			return
		case name = <-a.queue:
		}
		w := &workv1alpha1.Work{}
		if err := a.works.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(a.Name), Name: name}, w); err != nil {
			continue
		}
		var err error
		switch {
		case w.DeletionTimestamp != nil:
			if controllerutil.RemoveFinalizer(w, workv1alpha1.FinalizerExecution) {
				err = a.client.Update(ctx, w)
			}
		case !Acknowledged(w):
			w.Status = appliedStatus(w)
			err = a.client.Status().Update(ctx, w)
		}
		if apierrors.IsConflict(err) {
			// The cache is behind; the newer version's event queues the Work again.
			continue
		}
	}
}

// Acknowledged says whether the Work's agent reported its current generation applied.
func Acknowledged(w *workv1alpha1.Work) bool {
	c := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkConditionApplied)
	return c != nil && c.ObservedGeneration == w.Generation
}

// appliedStatus is the status a Work would get from a member where every object runs as asked.
func appliedStatus(w *workv1alpha1.Work) workv1alpha1.WorkStatus {
	var status workv1alpha1.WorkStatus
	for i, m := range w.Spec.Workload.Manifests {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(m.Raw); err != nil {
			continue
		}
		gvk := obj.GroupVersionKind()
		ms := workv1alpha1.ManifestStatus{
			Identifier: workv1alpha1.ResourceIdentifier{Ordinal: i, Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind,
				Namespace: obj.GetNamespace(), Name: obj.GetName()},
			Applied: true, Health: workv1alpha1.ResourceHealthy,
		}
		meta.SetStatusCondition(&ms.Conditions, metav1.Condition{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionTrue, Reason: "Applied", Message: "applied"})
		meta.SetStatusCondition(&ms.Conditions, metav1.Condition{Type: workv1alpha1.ManifestConditionObserved, Status: metav1.ConditionTrue, Reason: "ObservedGeneration", Message: "observed"})
		if replicas, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas"); found {
			raw, _ := json.Marshal(map[string]int64{"observedGeneration": 1, "replicas": replicas, "updatedReplicas": replicas,
				"readyReplicas": replicas, "availableReplicas": replicas})
			ms.Status = &runtime.RawExtension{Raw: raw}
		}
		status.ManifestStatuses = append(status.ManifestStatuses, ms)
	}
	for _, t := range []string{workv1alpha1.WorkConditionApplied, workv1alpha1.WorkConditionAvailable} {
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t,
			Message: "hollow agent", ObservedGeneration: w.Generation})
	}
	return status
}
