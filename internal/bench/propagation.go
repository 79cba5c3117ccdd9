package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/bench/measure"
	"github.com/flotilla-io/flotilla/internal/devenv"
	"github.com/flotilla-io/flotilla/internal/process"
)

// PropagationOptions configure `flotilla bench propagation`.
type PropagationOptions struct {
	// Members is the number of member clusters; Objects the number of Deployments, each placed on every member.
	Members, Objects int
	// Replicas of each Deployment.
	Replicas int32
	// Mode is how members join: pull, push or mixed.
	Mode string
	// Sequential creates (updates, deletes) one object at a time, waiting for it to finish everywhere;
	// otherwise all at once.
	Sequential bool
	// Waves to run, in order: create, then optionally update, then delete.
	Waves []string
	// Timeout bounds each wave.
	Timeout time.Duration
	// Out, if set, receives the results as JSON.
	Out string
	// ProfileDir, if set, starts the hub with --profiling and receives its profiles: at rest, and the CPU
	// during each wave (measure.HubProfiler).
	ProfileDir string
	// MemberNice, when above zero, runs the members and agents at this niceness, so that the hub gets the CPU
	// first (devenv.UpOptions.MemberNice).
	MemberNice int
	// Rest is how long the fleet is watched at rest after the create wave (every object placed, nothing
	// changing): the hub's writes and the CPU per cluster. 0 skips it.
	Rest time.Duration
}

// Validate checks the options before anything starts.
func (o *PropagationOptions) Validate() error {
	if err := measure.ValidateProfileDir(o.ProfileDir); err != nil {
		return err
	}
	switch {
	case o.Members < 1 || o.Members > 20:
		return fmt.Errorf("--members %d: must be between 1 and 20", o.Members)
	case o.Objects < 1:
		return fmt.Errorf("--objects %d: must be at least 1", o.Objects)
	case o.Replicas < 1:
		return fmt.Errorf("--replicas %d: must be at least 1", o.Replicas)
	case o.Mode != devenv.ModePull && o.Mode != devenv.ModePush && o.Mode != devenv.ModeMixed:
		return fmt.Errorf("--mode %q: must be pull, push or mixed", o.Mode)
	case o.Timeout <= 0:
		return fmt.Errorf("--timeout %s: must be positive", o.Timeout)
	case o.Rest < 0:
		return fmt.Errorf("--rest %s: must not be negative (0 skips the measurement at rest)", o.Rest)
	case o.MemberNice < 0 || o.MemberNice > 19:
		return fmt.Errorf("--member-nice %d: must be between 0 and 19", o.MemberNice)
	case len(o.Waves) == 0 || len(o.Waves) > len(allWaves):
		return fmt.Errorf("--waves %s: must be create, create,update or create,update,delete", strings.Join(o.Waves, ","))
	}
	for i, w := range o.Waves {
		if w != allWaves[i].name {
			return fmt.Errorf("--waves %s: must be create, create,update or create,update,delete", strings.Join(o.Waves, ","))
		}
	}
	return nil
}

// PropagationResult is what `flotilla bench propagation` measured.
type PropagationResult struct {
	Members    int    `json:"members"`
	Objects    int    `json:"objects"`
	Replicas   int32  `json:"replicas"`
	Mode       string `json:"mode"`
	Sequential bool   `json:"sequential"`
	// MemberNice is the niceness the members and agents ran at (0: the hub's).
	MemberNice int `json:"memberNice,omitempty"`
	// HubIdleRSSMiB is the hub's resident memory with every member joined, before the first wave.
	HubIdleRSSMiB float64 `json:"hubIdleRSSMiB"`
	// Waves are create, update and delete.
	Waves map[string]WaveResult `json:"waves"`
	// AtRest is the fleet after the create wave with nothing changing (--rest).
	AtRest *RestResult `json:"atRest,omitempty"`
}

// RestResult is what the fleet costs at rest, per member cluster and minute.
type RestResult struct {
	Seconds float64 `json:"seconds"`
	// Writes are the hub API's writes per cluster per minute, the agents' and the hub's alike, Leases
	// (heartbeats) apart: status reports, resource models, Work statuses.
	Writes float64 `json:"writesPerClusterPerMinute"`
	// LeaseWrites are the Lease renewals per cluster per minute: the agents' heartbeats and the hub's own
	// leader elections (which do not grow with the fleet).
	LeaseWrites float64 `json:"leaseWritesPerClusterPerMinute"`
	// WritesByResource are Writes by resource (resource/subresource).
	WritesByResource map[string]float64 `json:"writesByResource,omitempty"`
	// CPUSeconds are the CPU seconds per minute of the hub, the members and the agents.
	CPUSeconds map[string]float64 `json:"cpuSecondsPerMinute"`
}

// WaveResult is one wave: per stage, seconds from the hub request to the stage (p50, p90, p99, max).
type WaveResult struct {
	Stages map[string]map[string]float64 `json:"stages"`
	// MemberOpsPerSecond is how many object × member changes per second reached the members.
	MemberOpsPerSecond float64 `json:"memberOpsPerSecond"`
	// CPUSeconds used during the wave by the hub, the members (API servers, controllers, simulated nodes)
	// and the agents.
	CPUSeconds map[string]float64 `json:"cpuSeconds"`
	// HubPeakRSSMiB is the hub's peak resident memory since it started, at the end of the wave.
	HubPeakRSSMiB float64 `json:"hubPeakRSSMiB"`
	// HubRequests are the hub API's requests during the wave, until its writes settled, per object.
	HubRequests measure.HubRequests `json:"hubRequests"`
	// UserCreates, in the create wave, is how long the user's creates took, against an idle hub.
	UserCreates *UserCreates `json:"userCreates,omitempty"`
	// Queues are the hub's controllers' workqueues during the wave, until its writes settled: time waiting
	// in the queue and time worked, per controller.
	Queues []measure.QueueStats `json:"queues,omitempty"`
}

// Stages, in the order they happen. Object stages happen once per object, the others once per object and
// member.
const (
	stageScheduled       = "scheduled"
	stageWorkWritten     = "workWritten"
	stageApplied         = "applied"
	stageAvailable       = "available"
	stageHubStatus       = "hubStatus"
	stageWorkDeleted     = "workDeleted"
	stageMemberDeleted   = "memberDeleted"
	stageBindingDeleted  = "bindingDeleted"
	stageTemplateDeleted = "templateDeleted"
)

var objectStages = map[string]bool{stageScheduled: true, stageHubStatus: true, stageBindingDeleted: true, stageTemplateDeleted: true}

// wave says what each wave does to an object and which stages it measures.
type wave struct {
	name   string
	stages []string
	// image and generation are what the hub template and its Works carry once the wave reached them.
	image      string
	generation int64
	// throughputStage counts the member changes.
	throughputStage string
}

var (
	createWave = &wave{name: "create", image: "nginx:1", generation: 1, throughputStage: stageApplied,
		stages: []string{stageScheduled, stageWorkWritten, stageApplied, stageAvailable, stageHubStatus}}
	updateWave = &wave{name: "update", image: "nginx:2", generation: 2, throughputStage: stageApplied,
		stages: []string{stageWorkWritten, stageApplied, stageAvailable, stageHubStatus}}
	deleteWave = &wave{name: "delete", throughputStage: stageMemberDeleted,
		stages: []string{stageWorkDeleted, stageMemberDeleted, stageBindingDeleted, stageTemplateDeleted}}
	allWaves = []*wave{createWave, updateWave, deleteWave}
)

const benchNamespace = "bench"

// deploymentOfBinding is the bench Deployment whose binding (or, by its workv1alpha1.LabelBindingName, whose
// Work) is named binding. Every benchmark places apps/v1 Deployments with short names, which
// workv1alpha1.BindingName names NAME-deployment; TestDeploymentOfBinding holds the two together.
func deploymentOfBinding(binding string) string { return strings.TrimSuffix(binding, "-deployment") }

// propagation is one run of the benchmark.
type propagation struct {
	o     PropagationOptions
	fleet *memberFleet
	// user acts as a namespace user, for the changes each wave makes.
	user     kubernetes.Interface
	members  []string
	recorder *measure.Recorder
	profiler *measure.HubProfiler
	current  atomic.Pointer[wave]
	// timer, while set, times the creates.
	timer atomic.Pointer[measure.ClientTimer]
}

// RunPropagation starts a hub and members, places Objects Deployments on every member, then changes every
// image and deletes them all, timing each stage of each object in each member.
func RunPropagation(ctx context.Context, o PropagationOptions, out io.Writer, progress func(string)) error {
	if err := o.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Three simulated nodes per member must hold every replica.
	nodePods := max(110, int(o.Replicas)*o.Objects/3+20)
	var hubArgs []string
	if o.ProfileDir != "" {
		hubArgs = measure.HubProfileArgs
	}
	fleet, err := startMemberFleet(ctx, "propagation", devenv.UpOptions{Members: o.Members, Mode: o.Mode,
		MemberArgs: []string{"--node-pods", strconv.Itoa(nodePods)}, HubArgs: hubArgs, MemberNice: o.MemberNice}, progress)
	if err != nil {
		return err
	}
	defer fleet.stop()

	p := &propagation{o: o, fleet: fleet, recorder: measure.NewRecorder()}
	if p.profiler, err = measure.NewHubProfiler(fleet.kube, o.ProfileDir); err != nil {
		return err
	}
	if err := p.watch(ctx); err != nil {
		return err
	}
	if p.user, err = setupUser(ctx, fleet.kube, fleet.config); err != nil {
		return err
	}
	if err := p.createPolicy(ctx); err != nil {
		return err
	}
	result := PropagationResult{Members: o.Members, Objects: o.Objects, Replicas: o.Replicas, Mode: o.Mode,
		Sequential: o.Sequential, MemberNice: o.MemberNice, Waves: map[string]WaveResult{}}
	// The fleet settles (first status reports, leases, caches filled) before the hub's idle memory is read.
	if err := sleep(ctx, 15*time.Second); err != nil {
		return err
	}
	idle, err := p.usage()
	if err != nil {
		return err
	}
	result.HubIdleRSSMiB = float64(idle["hub"].RSS) / (1 << 20)
	if p.profiler != nil {
		progress(fmt.Sprintf("profiling the hub at rest (%d s)", measure.RestCPUSeconds))
		if err := p.profiler.AtRest(ctx); err != nil {
			return err
		}
	}
	progress(fmt.Sprintf("reference: %d creates on the idle hub", o.Objects))
	idleCreates, err := p.idleCreates(ctx)
	if err != nil {
		return err
	}
	for _, w := range allWaves[:len(o.Waves)] {
		progress(fmt.Sprintf("%s wave: %d objects × %d members", w.name, o.Objects, o.Members))
		r, err := p.run(ctx, w, progress)
		if err != nil {
			return fmt.Errorf("%s wave: %w", w.name, err)
		}
		if r.UserCreates != nil {
			r.UserCreates.Idle = idleCreates
			r.UserCreates.Ratio = compare(r.UserCreates.Burst, idleCreates, o.Sequential)
		}
		result.Waves[w.name] = r
		if w.name == "create" && o.Rest > 0 {
			progress(fmt.Sprintf("at rest: %s with every object placed", o.Rest))
			if result.AtRest, err = p.atRest(ctx, o.Rest); err != nil {
				return fmt.Errorf("at rest: %w", err)
			}
		}
	}
	printPropagation(out, &result)
	return writeJSON(o.Out, &result)
}

// watch records stages from watches on the hub and on every member.
func (p *propagation) watch(ctx context.Context) error {
	for name := range p.fleet.memberConfigs {
		p.members = append(p.members, name)
	}
	hubConfig := p.fleet.config
	err := watchKind(ctx, hubConfig, &workv1alpha1.ResourceBinding{}, benchNamespace, func(obj client.Object, deleted bool) {
		rb := obj.(*workv1alpha1.ResourceBinding)
		object := deploymentOfBinding(rb.Name)
		switch {
		case deleted:
			p.recorder.Mark(stageBindingDeleted, object, "")
		case meta.IsStatusConditionTrue(rb.Status.Conditions, workv1alpha1.ConditionScheduled):
			p.recorder.Mark(stageScheduled, object, "")
		}
	})
	if err != nil {
		return err
	}
	err = watchKind(ctx, hubConfig, &workv1alpha1.Work{}, "", func(obj client.Object, deleted bool) {
		w := obj.(*workv1alpha1.Work)
		cluster, ok := clusterv1alpha1.ClusterOfNamespace(w.Namespace)
		if !ok || w.Labels[workv1alpha1.LabelBindingNamespace] != benchNamespace {
			return
		}
		object := deploymentOfBinding(w.Labels[workv1alpha1.LabelBindingName])
		switch {
		case deleted:
			p.recorder.Mark(stageWorkDeleted, object, cluster)
		case w.TemplateGeneration() >= p.current.Load().generation:
			p.recorder.Mark(stageWorkWritten, object, cluster)
		}
	})
	if err != nil {
		return err
	}
	// Duplicated, the hub counts the replicas every cluster has: the spec's count once all of them have it.
	total := p.o.Replicas
	err = watchKind(ctx, hubConfig, &appsv1.Deployment{}, benchNamespace, func(obj client.Object, deleted bool) {
		d := obj.(*appsv1.Deployment)
		switch {
		case deleted:
			p.recorder.Mark(stageTemplateDeleted, d.Name, "")
		case image(d) == p.current.Load().image && d.Status.ObservedGeneration >= d.Generation &&
			d.Status.UpdatedReplicas == total && d.Status.AvailableReplicas == total:
			p.recorder.Mark(stageHubStatus, d.Name, "")
		}
	})
	if err != nil {
		return err
	}
	for name, cfg := range p.fleet.memberConfigs {
		err = watchKind(ctx, cfg, &appsv1.Deployment{}, benchNamespace, func(obj client.Object, deleted bool) {
			d := obj.(*appsv1.Deployment)
			if deleted {
				p.recorder.Mark(stageMemberDeleted, d.Name, name)
				return
			}
			if image(d) != p.current.Load().image {
				return
			}
			p.recorder.Mark(stageApplied, d.Name, name)
			replicas := ptr.Deref(d.Spec.Replicas, 1)
			if d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == replicas &&
				d.Status.AvailableReplicas == replicas && d.Status.Replicas == replicas {
				p.recorder.Mark(stageAvailable, d.Name, name)
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func image(d *appsv1.Deployment) string {
	if len(d.Spec.Template.Spec.Containers) == 0 {
		return ""
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

// createPolicy makes a policy placing every Deployment in the benchmark's namespace on every member.
func (p *propagation) createPolicy(ctx context.Context) error {
	return p.fleet.admin.Create(ctx, &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "everywhere", Namespace: benchNamespace},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
			Placement:         policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: p.members}},
		},
	})
}

// run runs one wave over every object, all at once or one after another, and measures it.
func (p *propagation) run(ctx context.Context, w *wave, progress func(string)) (WaveResult, error) {
	p.recorder.Reset()
	p.current.Store(w)
	before, err := p.usage()
	if err != nil {
		return WaveResult{}, err
	}
	metricsBefore, err := measure.ScrapeHubMetrics(ctx, p.fleet.kube)
	if err != nil {
		return WaveResult{}, err
	}
	requestsBefore, err := measure.RequestCountsOf(metricsBefore)
	if err != nil {
		return WaveResult{}, err
	}
	stopProfile := p.profiler.CPUDuring(ctx, "hub-cpu-"+w.name+".pprof")
	timer := &measure.ClientTimer{}
	if w == createWave {
		p.timer.Store(timer)
		defer p.timer.Store(nil)
	}
	want := map[string]int{}
	for _, s := range w.stages {
		want[s] = p.o.Objects
		if !objectStages[s] {
			want[s] *= len(p.members)
		}
	}
	if p.o.Sequential {
		for i := range p.o.Objects {
			name := objectName(i)
			p.recorder.Begin(name)
			if err := p.act(ctx, w, benchNamespace, name); err != nil {
				return WaveResult{}, err
			}
			if err := p.waitObject(ctx, w, name); err != nil {
				return WaveResult{}, err
			}
		}
	} else {
		if err := p.actOnAll(ctx, w, benchNamespace); err != nil {
			return WaveResult{}, err
		}
	}
	if err := p.recorder.WaitCounts(ctx, want, p.o.Timeout, progress); err != nil {
		return WaveResult{}, err
	}
	after, err := p.usage()
	if err != nil {
		return WaveResult{}, err
	}
	if err := stopProfile(); err != nil {
		return WaveResult{}, err
	}
	metricsAfter, err := measure.SettledMetrics(ctx, p.fleet.kube)
	if err != nil {
		return WaveResult{}, err
	}
	requestsAfter, err := measure.RequestCountsOf(metricsAfter)
	if err != nil {
		return WaveResult{}, err
	}
	r := WaveResult{Stages: map[string]map[string]float64{}, MemberOpsPerSecond: p.recorder.Rate(w.throughputStage),
		CPUSeconds: map[string]float64{}, HubPeakRSSMiB: float64(after["hub"].PeakRSS) / (1 << 20),
		HubRequests: requestsAfter.Since(requestsBefore).PerObject(p.o.Objects),
		Queues:      measure.QueuesOf(metricsAfter).Since(measure.QueuesOf(metricsBefore))}
	if w == createWave {
		r.UserCreates = &UserCreates{Burst: timer.Times()}
	}
	for _, s := range w.stages {
		r.Stages[s] = measure.Percentiles(p.recorder.Durations(s))
	}
	for kind, u := range after {
		r.CPUSeconds[kind] = (u.CPU - before[kind].CPU).Seconds()
	}
	return r, nil
}

func objectName(i int) string { return fmt.Sprintf("bench-%04d", i) }

// act does the wave's change to one object on the hub, as the user; creates are timed while a timer is set.
func (p *propagation) act(ctx context.Context, w *wave, namespace, name string) error {
	deployments := p.user.AppsV1().Deployments(namespace)
	switch w {
	case createWave:
		create := func() error {
			_, err := deployments.Create(ctx, benchDeployment(name, namespace, p.o.Replicas, w.image), metav1.CreateOptions{})
			return err
		}
		if timer := p.timer.Load(); timer != nil {
			return timer.Do(create)
		}
		return create()
	case updateWave:
		patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":%q}]}}}}`, w.image)
		_, err := deployments.Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	default:
		return deployments.Delete(ctx, name, metav1.DeleteOptions{})
	}
}

// actOnAll does the wave's change to every object in namespace at once, from a few clients in parallel.
func (p *propagation) actOnAll(ctx context.Context, w *wave, namespace string) error {
	const workers = 16
	names := make(chan string)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for name := range names {
				if namespace == benchNamespace {
					p.recorder.Begin(name)
				}
				if err := p.act(ctx, w, namespace, name); err != nil {
					errs <- fmt.Errorf("%s: %w", name, err)
					return
				}
			}
		})
	}
	var err error
feed:
	for i := range p.o.Objects {
		select {
		case names <- objectName(i):
		case err = <-errs:
			break feed
		}
	}
	close(names)
	wg.Wait()
	close(errs)
	if err != nil {
		return err
	}
	return <-errs
}

// waitObject waits until the object reached every stage of the wave everywhere.
func (p *propagation) waitObject(ctx context.Context, w *wave, name string) error {
	deadline := time.Now().Add(p.o.Timeout)
	for {
		done := true
		for _, s := range w.stages {
			clusters := p.members
			if objectStages[s] {
				clusters = []string{""}
			}
			done = done && p.recorder.Reached(s, name, clusters)
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not finish within %s", name, p.o.Timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// usage sums the CPU time of the fleet's processes by kind: hub, members, agents; the hub's memory as is.
// atRest watches the fleet for d with nothing changing: the hub's writes (from its request counters) and
// the CPU of every process, per member cluster and minute.
func (p *propagation) atRest(ctx context.Context, d time.Duration) (*RestResult, error) {
	scrape := func() (measure.RequestCounts, error) {
		m, err := measure.ScrapeHubMetrics(ctx, p.fleet.kube)
		if err != nil {
			return nil, err
		}
		return measure.RequestCountsOf(m)
	}
	before, err := scrape()
	if err != nil {
		return nil, err
	}
	cpuBefore, err := p.usage()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := sleep(ctx, d); err != nil {
		return nil, err
	}
	after, err := scrape()
	if err != nil {
		return nil, err
	}
	cpuAfter, err := p.usage()
	if err != nil {
		return nil, err
	}
	elapsed := time.Since(start)
	perClusterMinute := func(n float64) float64 { return n / float64(len(p.members)) / elapsed.Minutes() }
	r := &RestResult{Seconds: elapsed.Seconds(), WritesByResource: map[string]float64{}, CPUSeconds: map[string]float64{}}
	for resource, n := range after.Since(before).WritesByResource() {
		if resource == "leases" {
			r.LeaseWrites = perClusterMinute(n)
			continue
		}
		r.WritesByResource[resource] = perClusterMinute(n)
		r.Writes += perClusterMinute(n)
	}
	for kind, u := range cpuAfter {
		r.CPUSeconds[kind] = (u.CPU - cpuBefore[kind].CPU).Seconds() / elapsed.Minutes()
	}
	return r, nil
}

func (p *propagation) usage() (map[string]process.Usage, error) {
	sums := map[string]process.Usage{}
	for _, proc := range p.fleet.env.Processes() {
		u, err := proc.Usage()
		if err != nil {
			return nil, err
		}
		kind := "members"
		switch {
		case proc.Name == "hub":
			kind = "hub"
		case strings.HasPrefix(proc.Name, "agent-"):
			kind = "agents"
		}
		s := sums[kind]
		s.CPU += u.CPU
		s.RSS += u.RSS
		s.PeakRSS += u.PeakRSS
		sums[kind] = s
	}
	return sums, nil
}

func benchDeployment(name, namespace string, replicas int32, image string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
			},
		},
	}
}

func printPropagation(out io.Writer, r *PropagationResult) {
	how := "all at once"
	if r.Sequential {
		how = "one at a time"
	}
	fmt.Fprintf(out, "%d Deployments × %d members (%s), %s; seconds from the hub request\n", r.Objects, r.Members, r.Mode, how)
	fmt.Fprintf(out, "hub idle with the members joined: %.0f MiB RSS\n", r.HubIdleRSSMiB)
	for _, w := range allWaves {
		wr, ok := r.Waves[w.name]
		if !ok {
			continue
		}
		fmt.Fprintf(out, "\n%-8s %-16s %8s %8s %8s %8s\n", w.name, "stage", "p50", "p90", "p99", "max")
		for _, s := range w.stages {
			q := wr.Stages[s]
			fmt.Fprintf(out, "%-8s %-16s %8.3f %8.3f %8.3f %8.3f\n", "", s, q["p50"], q["p90"], q["p99"], q["max"])
		}
		fmt.Fprintf(out, "%-8s %.1f member changes/s; CPU s: hub %.1f, members %.1f, agents %.1f; hub peak RSS %.0f MiB\n", "",
			wr.MemberOpsPerSecond, wr.CPUSeconds["hub"], wr.CPUSeconds["members"], wr.CPUSeconds["agents"], wr.HubPeakRSSMiB)
		if c := wr.UserCreates; c != nil {
			fmt.Fprintf(out, "%-8s user's creates: %s; idle hub: %s; ratio %.2f (goal ≤ 1.5)\n", "",
				describeTimes(c.Burst), describeTimes(c.Idle), c.Ratio)
		}
		measure.PrintRequests(out, strings.Repeat(" ", 9), wr.HubRequests)
		measure.PrintQueues(out, strings.Repeat(" ", 9), wr.Queues)
	}
	if a := r.AtRest; a != nil {
		fmt.Fprintf(out, "\nat rest after the create wave (%.0f s), per cluster and minute: %.2f writes (goal ≤ 1), %.1f Lease renewals (heartbeats and the hub's leader elections); "+
			"CPU s per minute: hub %.2f, members %.2f, agents %.2f\n", a.Seconds, a.Writes, a.LeaseWrites, a.CPUSeconds["hub"], a.CPUSeconds["members"], a.CPUSeconds["agents"])
		for _, resource := range slices.Sorted(maps.Keys(a.WritesByResource)) {
			fmt.Fprintf(out, "         %-28s %.2f\n", resource, a.WritesByResource[resource])
		}
	}
}

func describeTimes(t measure.ClientTimes) string {
	return fmt.Sprintf("%d in %.2f s (each p50 %.3f s, p99 %.3f s)", t.Requests, t.Seconds, t.Each["p50"], t.Each["p99"])
}
