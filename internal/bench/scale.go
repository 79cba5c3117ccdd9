package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/bench/hollow"
	"github.com/flotilla-io/flotilla/internal/bench/measure"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
	"github.com/flotilla-io/flotilla/internal/process"
)

// ScaleOptions configure `flotilla bench scale`.
type ScaleOptions struct {
	// Clusters is the number of hollow agents.
	Clusters int
	// WorksPerCluster is how many Deployments, each placed on every cluster, the fleet holds at steady state.
	WorksPerCluster int
	// Objects is how many objects are fanned out to every cluster, one after another, to time the fan-out.
	Objects int
	// Settle is how long the fleet runs before the steady state is sampled, and how long it is sampled.
	Settle time.Duration
	// GracePeriod is the hub's --cluster-grace-period; agents renew their Leases every quarter of it
	// (clusterstatus.RenewalPeriod).
	GracePeriod time.Duration
	// Out, if set, receives the results as JSON.
	Out string
	// Hubs, when set, runs the hub as that many processes on an etcd of the benchmark's own, with --shard
	// when more than one (the agents join the first); 0 runs one hub with its embedded etcd.
	Hubs int
	// ProfileDir, if set, starts the hub with --profiling and receives its profiles: at rest, and the CPU
	// during the fan-out (measure.HubProfiler).
	ProfileDir string
}

// Validate checks the options before anything starts.
func (o *ScaleOptions) Validate() error {
	if err := measure.ValidateProfileDir(o.ProfileDir); err != nil {
		return err
	}
	switch {
	case o.Clusters < 1:
		return fmt.Errorf("--clusters %d: must be at least 1", o.Clusters)
	case o.WorksPerCluster < 0:
		return fmt.Errorf("--works-per-cluster %d: must not be negative", o.WorksPerCluster)
	case o.Hubs < 0 || o.Hubs > 8:
		return fmt.Errorf("--hubs %d: must be 0 (one hub, its own etcd) to 8", o.Hubs)
	case o.Objects < 1:
		return fmt.Errorf("--objects %d: must be at least 1", o.Objects)
	case o.GracePeriod < clusterstatus.MinGracePeriod:
		return fmt.Errorf("--cluster-grace-period %s: must be at least %s, the hub's minimum", o.GracePeriod, clusterstatus.MinGracePeriod)
	case o.Settle < clusterstatus.RenewalPeriod(o.GracePeriod):
		return fmt.Errorf("--settle %s: must be at least one heartbeat (%s with --cluster-grace-period %s)", o.Settle,
			clusterstatus.RenewalPeriod(o.GracePeriod), o.GracePeriod)
	}
	return nil
}

// ScaleResult is what `flotilla bench scale` measured; durations in seconds.
type ScaleResult struct {
	Clusters        int `json:"clusters"`
	WorksPerCluster int `json:"worksPerCluster"`
	// GracePeriodSeconds is the hub's --cluster-grace-period; agents renew every quarter of it.
	GracePeriodSeconds float64 `json:"gracePeriodSeconds"`
	// RegisterSeconds is how long all clusters took to join and become Ready, 32 joining at a time.
	RegisterSeconds float64 `json:"registerSeconds"`
	// Hubs is how many hub processes share the work (--hubs; 0: one, on its embedded etcd).
	Hubs int `json:"hubs,omitempty"`
	// Steady is the hub at rest with every cluster heartbeating and every Work acknowledged: the first hub
	// process, where the agents connect.
	Steady SteadyState `json:"steady"`
	// HubProcesses is each hub process at rest, the first one first, with --hubs.
	HubProcesses []SteadyState `json:"hubProcesses,omitempty"`
	// Storage is what the hub's etcd holds at rest (not measured with --hubs).
	Storage measure.Storage `json:"storage"`
	// HeartbeatToStatus is from an agent reporting its member unhealthy (or healthy again) to the
	// Cluster's Ready condition saying so.
	HeartbeatToStatus map[string]float64 `json:"heartbeatToStatus"`
	// FanOut is, per object placed on every cluster: created → scheduled, → the last cluster's Work written,
	// → the last cluster's acknowledgement, → status aggregated on the hub.
	FanOut map[string]map[string]float64 `json:"fanOut"`
	// FanOutQueues are the hub's controllers' workqueues during the fan-out: time waiting in the queue and
	// time worked, per controller.
	FanOutQueues []measure.QueueStats `json:"fanOutQueues,omitempty"`
}

// SteadyState is the hub's resource use at rest.
type SteadyState struct {
	HubCPUCores   float64 `json:"hubCPUCores"`
	HubRSSMiB     float64 `json:"hubRSSMiB"`
	HubPeakRSSMiB float64 `json:"hubPeakRSSMiB"`
	// HubFileRSSMiB is the part of the RSS backed by files: the binary and the embedded etcd's database.
	HubFileRSSMiB float64 `json:"hubFileRSSMiB"`
	// HubGoMemory is where the Go runtime of the hub that serves the API holds its memory (first hub only).
	HubGoMemory *measure.GoMemory `json:"hubGoMemory,omitempty"`
}

const stageAcknowledged = "acknowledged"

var fanOutStages = []string{stageScheduled, stageWorkWritten, stageAcknowledged, stageHubStatus}

// RunScale starts a hub as a child process and Clusters hollow agents in this process, then measures the
// hub at steady state, how fast it turns heartbeats into cluster status, and how fast it fans objects out.
func RunScale(ctx context.Context, o ScaleOptions, out io.Writer, progress func(string)) (err error) {
	if err := o.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hubArgs := []string{"--cluster-grace-period", o.GracePeriod.String()}
	if o.ProfileDir != "" {
		hubArgs = append(hubArgs, measure.HubProfileArgs...)
	}
	fleet, err := startShardedFleet(ctx, "scale", o.Clusters, o.Hubs, progress, hubArgs...)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil && ctx.Err() == nil {
			err = fleet.stopKeepingLogs(err)
		} else {
			fleet.stop()
		}
	}()
	hubConfig, kube, admin, agents := fleet.config, fleet.kube, fleet.admin, fleet.agents
	profiler, err := measure.NewHubProfiler(kube, o.ProfileDir)
	if err != nil {
		return err
	}
	result := ScaleResult{Hubs: o.Hubs, Clusters: o.Clusters, WorksPerCluster: o.WorksPerCluster, GracePeriodSeconds: o.GracePeriod.Seconds(),
		RegisterSeconds: fleet.registered.Seconds()}

	f := &fanOut{hub: kube, recorder: measure.NewRecorder(), clusters: make([]string, len(agents)), progress: progress}
	for i, a := range agents {
		f.clusters[i] = a.Name
	}
	if err := f.watch(ctx, hubConfig); err != nil {
		return err
	}
	if err := f.createPolicy(ctx, admin); err != nil {
		return err
	}
	if o.WorksPerCluster > 0 {
		progress(fmt.Sprintf("placing %d Deployments on every cluster", o.WorksPerCluster))
		if err := f.place(ctx, "steady", o.WorksPerCluster, false); err != nil {
			return err
		}
	}

	progress(fmt.Sprintf("letting the fleet settle for %s, then sampling the hub for %s", o.Settle, o.Settle))
	if err := sleep(ctx, o.Settle); err != nil {
		return err
	}
	steady, err := sampleSteady(ctx, fleet.hubs(), o.Settle)
	if err != nil {
		return err
	}
	result.Steady = steady[0]
	metrics, err := measure.ScrapeHubMetrics(ctx, kube)
	if err != nil {
		return err
	}
	memory := measure.GoMemoryOf(metrics)
	result.Steady.HubGoMemory = &memory
	if o.Hubs > 0 {
		result.HubProcesses = steady
	} else if result.Storage, err = measure.StorageOf(ctx, fleet.hubDir, fleet.hub.LogPath); err != nil {
		return err
	}
	if profiler != nil {
		progress(fmt.Sprintf("profiling the hub at rest (%d s)", measure.RestCPUSeconds))
		if err := profiler.AtRest(ctx); err != nil {
			return err
		}
	}

	progress("heartbeat to cluster status, 10 clusters")
	if result.HeartbeatToStatus, err = heartbeatToStatus(ctx, admin, agents[:min(10, len(agents))]); err != nil {
		return err
	}

	progress(fmt.Sprintf("fanning %d objects out to %d clusters, one after another", o.Objects, o.Clusters))
	f.recorder.Reset()
	queuesBefore, err := measure.ScrapeHubMetrics(ctx, kube)
	if err != nil {
		return err
	}
	stopProfile := profiler.CPUDuring(ctx, "hub-cpu-fanout.pprof")
	if err := f.place(ctx, "fanout", o.Objects, true); err != nil {
		return err
	}
	if err := stopProfile(); err != nil {
		return err
	}
	queuesAfter, err := measure.ScrapeHubMetrics(ctx, kube)
	if err != nil {
		return err
	}
	result.FanOutQueues = measure.QueuesOf(queuesAfter).Since(measure.QueuesOf(queuesBefore))
	result.FanOut = map[string]map[string]float64{}
	for _, s := range fanOutStages {
		result.FanOut[s] = measure.Percentiles(f.recorder.Latest(s))
	}
	printScale(out, &result)
	return writeJSON(o.Out, &result)
}

// sampleSteady measures each hub process's CPU over d, and its memory.
func sampleSteady(ctx context.Context, hubs []*process.Process, d time.Duration) ([]SteadyState, error) {
	before := make([]process.Usage, len(hubs))
	for i, hub := range hubs {
		var err error
		if before[i], err = hub.Usage(); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	if err := sleep(ctx, d); err != nil {
		return nil, err
	}
	steady := make([]SteadyState, len(hubs))
	for i, hub := range hubs {
		after, err := hub.Usage()
		if err != nil {
			return nil, err
		}
		steady[i] = SteadyState{
			HubCPUCores: (after.CPU - before[i].CPU).Seconds() / time.Since(start).Seconds(),
			HubRSSMiB:   float64(after.RSS) / (1 << 20), HubPeakRSSMiB: float64(after.PeakRSS) / (1 << 20),
			HubFileRSSMiB: float64(after.RSSFile) / (1 << 20),
		}
	}
	return steady, nil
}

// heartbeatToStatus has each agent report its member unhealthy, then healthy again, and times how long the
// hub takes to say so on the Cluster.
func heartbeatToStatus(ctx context.Context, admin client.Client, agents []*hollow.Agent) (map[string]float64, error) {
	var ds []time.Duration
	for _, a := range agents {
		for _, healthy := range []bool{false, true} {
			start := time.Now()
			if err := a.SetHealthy(ctx, healthy); err != nil {
				return nil, err
			}
			want := metav1.ConditionFalse
			if healthy {
				want = metav1.ConditionTrue
			}
			for {
				c := &clusterv1alpha1.Cluster{}
				if err := admin.Get(ctx, client.ObjectKey{Name: a.Name}, c); err != nil {
					return nil, err
				}
				if cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady); cond != nil && cond.Status == want {
					break
				}
				if time.Since(start) > time.Minute {
					return nil, fmt.Errorf("cluster %s did not become Ready=%s within a minute", a.Name, want)
				}
				if err := sleep(ctx, 5*time.Millisecond); err != nil {
					return nil, err
				}
			}
			ds = append(ds, time.Since(start))
		}
	}
	return measure.Percentiles(ds), nil
}

// fanOut places Deployments on every hollow cluster and records their stages.
type fanOut struct {
	hub      kubernetes.Interface
	recorder *measure.Recorder
	clusters []string
	// progress is told every 10 s what a wait still waits for.
	progress func(string)
}

func (f *fanOut) watch(ctx context.Context, cfg *rest.Config) error {
	err := watchKind(ctx, cfg, &workv1alpha1.ResourceBinding{}, benchNamespace, func(obj client.Object, deleted bool) {
		rb := obj.(*workv1alpha1.ResourceBinding)
		if !deleted && meta.IsStatusConditionTrue(rb.Status.Conditions, workv1alpha1.ConditionScheduled) {
			f.recorder.Mark(stageScheduled, deploymentOfBinding(rb.Name), "")
		}
	})
	if err != nil {
		return err
	}
	err = watchKind(ctx, cfg, &workv1alpha1.Work{}, "", func(obj client.Object, deleted bool) {
		w := obj.(*workv1alpha1.Work)
		cluster, ok := clusterv1alpha1.ClusterOfNamespace(w.Namespace)
		if deleted || !ok || w.Labels[workv1alpha1.LabelBindingNamespace] != benchNamespace {
			return
		}
		object := deploymentOfBinding(w.Labels[workv1alpha1.LabelBindingName])
		f.recorder.Mark(stageWorkWritten, object, cluster)
		if hollow.Acknowledged(w) {
			f.recorder.Mark(stageAcknowledged, object, cluster)
		}
	})
	if err != nil {
		return err
	}
	return watchKind(ctx, cfg, &appsv1.Deployment{}, benchNamespace, func(obj client.Object, deleted bool) {
		d := obj.(*appsv1.Deployment)
		// Duplicated, the hub counts the replicas every cluster has: the spec's count once all reported them.
		if !deleted && d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas == ptr.Deref(d.Spec.Replicas, 1) {
			f.recorder.Mark(stageHubStatus, d.Name, "")
		}
	})
}

// createPolicy places every Deployment of the bench namespace on every hollow cluster.
func (f *fanOut) createPolicy(ctx context.Context, admin client.Client) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}
	if _, err := f.hub.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	return admin.Create(ctx, &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "everywhere", Namespace: benchNamespace},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
			Placement: policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{hollow.LabelKey: hollow.LabelValue}}}},
		},
	})
}

// place creates n one-replica Deployments, one after another when sequential (each acknowledged by every
// cluster and aggregated before the next), and waits until all are.
func (f *fanOut) place(ctx context.Context, prefix string, n int, sequential bool) error {
	for i := range n {
		name := fmt.Sprintf("%s-%04d", prefix, i)
		f.recorder.Begin(name)
		if _, err := f.hub.AppsV1().Deployments(benchNamespace).Create(ctx, benchDeployment(name, benchNamespace, 1, "nginx:1"), metav1.CreateOptions{}); err != nil {
			return err
		}
		if sequential {
			// Every cluster's acknowledgement too, so that a wait that fails says whether the Works or their sum are missing.
			want := map[string]int{stageWorkWritten: (i + 1) * len(f.clusters), stageAcknowledged: (i + 1) * len(f.clusters), stageHubStatus: i + 1}
			if err := f.recorder.WaitCounts(ctx, want, 5*time.Minute, f.progress); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	want := map[string]int{stageWorkWritten: n * len(f.clusters), stageAcknowledged: n * len(f.clusters), stageHubStatus: n}
	return f.recorder.WaitCounts(ctx, want, 10*time.Minute, f.progress)
}

func printScale(out io.Writer, r *ScaleResult) {
	fmt.Fprintf(out, "%d hollow clusters, %d Deployments on each, Lease renewed every %s; seconds\n", r.Clusters, r.WorksPerCluster,
		clusterstatus.RenewalPeriod(time.Duration(r.GracePeriodSeconds*float64(time.Second))))
	fmt.Fprintf(out, "all joined and Ready           %8.1f\n", r.RegisterSeconds)
	fmt.Fprintf(out, "hub at steady state            %8.2f cores, %.0f MiB RSS (peak %.0f MiB)\n",
		r.Steady.HubCPUCores, r.Steady.HubRSSMiB, r.Steady.HubPeakRSSMiB)
	if m := r.Steady.HubGoMemory; m != nil {
		fmt.Fprintf(out, "  of it                        %.0f MiB backed by files; Go: %.0f MiB heap objects (next collection at %.0f), %.0f stacks of %.0f goroutines, %.0f free heap not returned\n",
			r.Steady.HubFileRSSMiB, m.ClassesMiB["heap_objects"], m.HeapGoalMiB, m.ClassesMiB["heap_stacks"], m.Goroutines, m.ClassesMiB["heap_free"])
	}
	for i, s := range r.HubProcesses {
		fmt.Fprintf(out, "  hub process %d                %8.2f cores, %.0f MiB RSS (peak %.0f MiB)\n", i+1, s.HubCPUCores, s.HubRSSMiB, s.HubPeakRSSMiB)
	}
	fmt.Fprintf(out, "hub's etcd                     %8.1f MiB database, %.1f MiB in use\n",
		float64(r.Storage.DBSizeBytes)/(1<<20), float64(r.Storage.DBSizeInUseBytes)/(1<<20))
	for _, k := range measure.StoredKinds {
		if s, ok := r.Storage.Kinds[k.Name]; ok {
			fmt.Fprintf(out, "  %-28s %8d objects, %6.0f bytes each\n", k.Name, s.Objects, s.BytesPerObject)
		}
	}
	fmt.Fprintf(out, "\n%-30s %8s %8s %8s %8s\n", "", "p50", "p90", "p99", "max")
	row := func(name string, q map[string]float64) {
		if q == nil {
			fmt.Fprintf(out, "%-30s %8s\n", name, "no sample")
			return
		}
		fmt.Fprintf(out, "%-30s %8.3f %8.3f %8.3f %8.3f\n", name, q["p50"], q["p90"], q["p99"], q["max"])
	}
	row("heartbeat → cluster status", r.HeartbeatToStatus)
	for _, s := range fanOutStages {
		row("fan-out: "+s, r.FanOut[s])
	}
	fmt.Fprintln(out)
	measure.PrintQueues(out, "", r.FanOutQueues)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
