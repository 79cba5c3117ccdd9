package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/bench/hollow"
	"github.com/flotilla-io/flotilla/internal/bench/measure"
)

// RolloutOptions configure `flotilla bench rollout`.
type RolloutOptions struct {
	// Members is the number of hollow clusters; Templates the number of Deployments, each placed on every
	// cluster; Changes the number of times every template is changed, each change rolled out in full
	// before the next.
	Members, Templates, Changes int
	// MinSuccessTime is the policy's progressive.minSuccessTime.
	MinSuccessTime time.Duration
	// Timeout bounds each wait: the first placement, each change's rollout.
	Timeout time.Duration
	// Out, if set, receives the results as JSON.
	Out string
}

// Validate checks the options before anything starts.
func (o *RolloutOptions) Validate() error {
	switch {
	case o.Members < 2 || o.Members > 100:
		return fmt.Errorf("--members %d: must be between 2 and 100 (a wave after the first needs two clusters)", o.Members)
	case o.Templates < 1:
		return fmt.Errorf("--templates %d: must be at least 1", o.Templates)
	case o.Changes < 1:
		return fmt.Errorf("--changes %d: must be at least 1", o.Changes)
	case o.MinSuccessTime <= 0:
		return fmt.Errorf("--min-success-time %s: must be positive", o.MinSuccessTime)
	case o.Timeout <= 0:
		return fmt.Errorf("--timeout %s: must be positive", o.Timeout)
	}
	return nil
}

// RolloutResult is what `flotilla bench rollout` measured; durations in seconds.
type RolloutResult struct {
	Members               int     `json:"members"`
	Templates             int     `json:"templates"`
	Changes               int     `json:"changes"`
	MinSuccessTimeSeconds float64 `json:"minSuccessTimeSeconds"`
	// Waves is the number of waves after the first that were timed: (members−1) per template and change.
	Waves int `json:"waves"`
	// WaveDelay is, over those waves, the time from the previous wave's cluster reporting the revision
	// healthy plus minSuccessTime to the next cluster's Work updated to it (p50, p90, p99, max); MinWaveDelay
	// is the smallest (negative: a wave started before minSuccessTime had passed).
	WaveDelay    map[string]float64 `json:"waveDelay"`
	MinWaveDelay float64            `json:"minWaveDelay"`
	// Change is, over the changes, the time from the templates changed to every binding's RolloutComplete.
	Change map[string]float64 `json:"change"`
	// HubRequests are the hub's API requests per template change (every client's, the hollow agents' and
	// their Lease renewals included).
	HubRequests measure.HubRequests `json:"hubRequests"`
	// GoalSeconds is the goal for the wave delay's p99.
	GoalSeconds float64 `json:"goalSeconds"`
}

// rolloutWaveGoal is issue #30's goal: the hub starts the next wave within 1 s of the previous wave's
// minSuccessTime.
const rolloutWaveGoal = time.Second

// RunRollout starts a hub and Members hollow clusters, places Templates Deployments on every cluster with
// a Progressive rollout one cluster at a time, changes every template Changes times, each rolled out in
// full before the next, and times from a watch of the Works how soon the hub starts each wave once the
// previous one succeeded.
func RunRollout(ctx context.Context, o RolloutOptions, out io.Writer, progress func(string)) error {
	if err := o.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fleet, err := startHollowFleet(ctx, "rollout", o.Members, progress)
	if err != nil {
		return err
	}
	defer fleet.stop()
	r := &rolloutRun{o: o, fleet: fleet, waves: newWaveLog(), bindings: map[string]workv1alpha1.ResourceBinding{}}
	for i := range o.Templates {
		r.templates = append(r.templates, fmt.Sprintf("roll-%04d", i))
	}
	if err := r.watch(ctx); err != nil {
		return err
	}
	if err := r.createObjects(ctx); err != nil {
		return err
	}
	targets, err := r.waitComplete(ctx, nil)
	if err != nil {
		return fmt.Errorf("placing %d Deployments: %w", o.Templates, err)
	}
	progress(fmt.Sprintf("%d Deployments on %d clusters, rolled out", o.Templates, o.Members))

	before, err := measure.SettledMetrics(ctx, fleet.kube)
	if err != nil {
		return err
	}
	var changed []revisionKey
	var changes []time.Duration
	for i := 1; i <= o.Changes; i++ {
		start := time.Now()
		for _, t := range r.templates {
			patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.%d"}]}}}}`, i)
			if _, err := fleet.kube.AppsV1().Deployments(benchNamespace).Patch(ctx, t, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				return err
			}
		}
		if targets, err = r.waitComplete(ctx, targets); err != nil {
			return fmt.Errorf("change %d: %w", i, err)
		}
		changes = append(changes, time.Since(start))
		progress(fmt.Sprintf("change %d rolled out to every cluster after %.1fs", i, time.Since(start).Seconds()))
		for _, b := range slices.Sorted(maps.Keys(targets)) {
			changed = append(changed, revisionKey{b, targets[b]})
		}
	}
	after, err := measure.SettledMetrics(ctx, fleet.kube)
	if err != nil {
		return err
	}
	requestsBefore, err := measure.RequestCountsOf(before)
	if err != nil {
		return err
	}
	requestsAfter, err := measure.RequestCountsOf(after)
	if err != nil {
		return err
	}

	var delays []time.Duration
	for _, k := range changed {
		ds, err := waveDelays(r.waves.clusters(k), o.Members, o.MinSuccessTime)
		if err != nil {
			return fmt.Errorf("binding %s, revision %s: %w", k.binding, k.hash, err)
		}
		delays = append(delays, ds...)
	}
	result := RolloutResult{Members: o.Members, Templates: o.Templates, Changes: o.Changes, MinSuccessTimeSeconds: o.MinSuccessTime.Seconds(),
		Waves: len(delays), WaveDelay: measure.Percentiles(delays), MinWaveDelay: slices.Min(delays).Seconds(),
		Change:      measure.Percentiles(changes),
		HubRequests: requestsAfter.Since(requestsBefore).PerObject(o.Changes * o.Templates), GoalSeconds: rolloutWaveGoal.Seconds()}
	printRollout(out, &result)
	return writeJSON(o.Out, &result)
}

// rolloutRun is one run of the rollout benchmark: its fleet, the templates, and what its watches saw.
type rolloutRun struct {
	o         RolloutOptions
	fleet     *hollowFleet
	templates []string
	waves     *waveLog

	mu sync.Mutex
	// bindings are the latest of the templates' bindings, by name.
	bindings map[string]workv1alpha1.ResourceBinding
}

// watch records the Works' waves and keeps the bindings' latest status.
func (r *rolloutRun) watch(ctx context.Context) error {
	err := watchKind(ctx, r.fleet.config, &workv1alpha1.Work{}, "", func(obj client.Object, deleted bool) {
		w := obj.(*workv1alpha1.Work)
		cluster, ok := clusterv1alpha1.ClusterOfNamespace(w.Namespace)
		if deleted || !ok || w.Labels[workv1alpha1.LabelBindingNamespace] != benchNamespace {
			return
		}
		r.waves.observe(w.Labels[workv1alpha1.LabelBindingName], cluster, w, time.Now())
	})
	if err != nil {
		return err
	}
	return watchKind(ctx, r.fleet.config, &workv1alpha1.ResourceBinding{}, benchNamespace, func(obj client.Object, deleted bool) {
		b := obj.(*workv1alpha1.ResourceBinding)
		r.mu.Lock()
		defer r.mu.Unlock()
		if deleted {
			delete(r.bindings, b.Name)
		} else {
			r.bindings[b.Name] = *b
		}
	})
}

// createObjects makes the namespace, a policy placing every Deployment of it on every hollow cluster and
// rolling its changes out one cluster at a time, and the Deployments.
func (r *rolloutRun) createObjects(ctx context.Context) error {
	admin := r.fleet.admin
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}); err != nil {
		return err
	}
	err := admin.Create(ctx, &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "progressive", Namespace: benchNamespace},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
			Placement: policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{hollow.LabelKey: hollow.LabelValue}}}},
			Rollout: &policyv1alpha1.RolloutStrategy{Type: policyv1alpha1.RolloutProgressive,
				Progressive: &policyv1alpha1.ProgressiveRollout{MaxConcurrency: &intstr.IntOrString{Type: intstr.Int, IntVal: 1},
					MinSuccessTime: metav1.Duration{Duration: r.o.MinSuccessTime}}},
		},
	})
	if err != nil {
		return err
	}
	for _, t := range r.templates {
		if err := admin.Create(ctx, benchDeployment(t, benchNamespace, 1, "nginx:1")); err != nil {
			return err
		}
	}
	return nil
}

// waitComplete waits until every template's binding rolled a revision other than its entry in before out
// to every cluster (RolloutComplete), and returns the revision hash each one rolled out, by binding.
func (r *rolloutRun) waitComplete(ctx context.Context, before map[string]string) (map[string]string, error) {
	targets := map[string]string{}
	var waiting string
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, r.o.Timeout, true, func(context.Context) (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, t := range r.templates {
			name := workv1alpha1.BindingName(schema.GroupKind{Group: "apps", Kind: "Deployment"}, t)
			b, ok := r.bindings[name]
			st := b.Status.Rollout
			switch {
			case !ok || st == nil:
				waiting = name + " has no rollout status"
				return false, nil
			case st.TargetHash == before[name]:
				waiting = name + " still targets revision " + st.TargetHash
				return false, nil
			case len(st.Clusters) != r.o.Members || st.StableHash != st.TargetHash ||
				!meta.IsStatusConditionTrue(b.Status.Conditions, workv1alpha1.ConditionRolloutComplete):
				var states []string
				for _, c := range st.Clusters {
					states = append(states, fmt.Sprintf("%s %s on revision %d", c.Name, c.State, c.Revision))
				}
				waiting = fmt.Sprintf("%s: revision %d not complete on %d clusters: %s", name, st.TargetRevision, r.o.Members, strings.Join(states, ", "))
				return false, nil
			}
			targets[name] = st.TargetHash
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, waiting)
	}
	return targets, nil
}

func printRollout(out io.Writer, r *RolloutResult) {
	fmt.Fprintf(out, "%d Deployments on %d hollow clusters, Progressive one cluster at a time, minSuccessTime %.1fs; %d changes; seconds\n",
		r.Templates, r.Members, r.MinSuccessTimeSeconds, r.Changes)
	fmt.Fprintf(out, "\n%-44s %8s %8s %8s %8s\n", "", "p50", "p90", "p99", "max")
	row := func(name string, q map[string]float64) {
		fmt.Fprintf(out, "%-44s %8.3f %8.3f %8.3f %8.3f\n", name, q["p50"], q["p90"], q["p99"], q["max"])
	}
	row(fmt.Sprintf("wave delay (%d waves after the first)", r.Waves), r.WaveDelay)
	row("change → RolloutComplete on every binding", r.Change)
	fmt.Fprintf(out, "smallest wave delay %.3f s (negative: a wave started before minSuccessTime had passed)\n", r.MinWaveDelay)
	fmt.Fprintln(out)
	fmt.Fprintln(out, "per template change:")
	measure.PrintRequests(out, "  ", r.HubRequests)
	verdict := "met"
	if r.WaveDelay["p99"] > r.GoalSeconds {
		verdict = "missed"
	}
	fmt.Fprintf(out, "\nwave delay p99 %.3f s: goal ≤ %.0f s after the previous wave's minSuccessTime %s\n", r.WaveDelay["p99"], r.GoalSeconds, verdict)
}
