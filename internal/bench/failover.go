package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/bench/measure"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
	"github.com/flotilla-io/flotilla/internal/devenv"
	"github.com/flotilla-io/flotilla/internal/process"
)

// FailoverOptions configure `flotilla bench failover`.
type FailoverOptions struct {
	// Members is the number of member clusters (pull); Objects the number of Deployments.
	Members, Objects int
	// Replicas of each Deployment, divided over the members.
	Replicas int32
	// GracePeriod is the hub's --cluster-grace-period: how long a member may miss heartbeats.
	GracePeriod time.Duration
	// Toleration is how long the policy tolerates a member's NoExecute health taints before its replicas
	// move.
	Toleration time.Duration
	// Timeout bounds each wait: the fleet running in full, the failover, the cleanup.
	Timeout time.Duration
	// Out, if set, receives the results as JSON.
	Out string
}

// Validate checks the options before anything starts.
func (o *FailoverOptions) Validate() error {
	switch {
	case o.Members < 2 || o.Members > 20:
		return fmt.Errorf("--members %d: must be between 2 and 20 (one is frozen, the others take its replicas)", o.Members)
	case o.Objects < 1:
		return fmt.Errorf("--objects %d: must be at least 1", o.Objects)
	case o.Replicas < 1:
		return fmt.Errorf("--replicas %d: must be at least 1", o.Replicas)
	case o.GracePeriod < clusterstatus.MinGracePeriod:
		return fmt.Errorf("--cluster-grace-period %s: must be at least %s, the hub's minimum", o.GracePeriod, clusterstatus.MinGracePeriod)
	case o.Toleration <= 0 || o.Toleration%time.Second != 0:
		return fmt.Errorf("--toleration %s: must be a positive whole number of seconds", o.Toleration)
	case o.Timeout <= 0:
		return fmt.Errorf("--timeout %s: must be positive", o.Timeout)
	}
	return nil
}

// FailoverResult is what `flotilla bench failover` measured; durations in seconds.
type FailoverResult struct {
	Members            int     `json:"members"`
	Objects            int     `json:"objects"`
	Replicas           int32   `json:"replicas"`
	GracePeriodSeconds float64 `json:"gracePeriodSeconds"`
	TolerationSeconds  float64 `json:"tolerationSeconds"`
	// TaintSeconds is from the freeze to the member's NoExecute health taint; omitted when no such taint
	// was seen (the replicas moved for another reason).
	TaintSeconds float64 `json:"taintSeconds,omitempty"`
	// Failover holds, per stage (rescheduled, replacementApplied, hubHealthy, replacementAvailable), the
	// percentiles over the objects of the time from the freeze.
	Failover map[string]map[string]float64 `json:"failover"`
	// Cleanup is, over the objects, the time from the resume until the evicted copy is gone from the member.
	Cleanup map[string]float64 `json:"cleanup"`
	// SurvivingReplicas were placed on the other members before the freeze; MinAvailableReplicas is the
	// fewest available there at any change the members' watches showed, from the freeze until every
	// replacement was available. No gap: the second is not below the first.
	SurvivingReplicas    int `json:"survivingReplicas"`
	MinAvailableReplicas int `json:"minAvailableReplicas"`
	// HubHealthyEarly counts the objects whose binding the hub called Healthy in the new placement before
	// every member ran it in full (the hub's word is then wrong, and graceful eviction ends too soon).
	HubHealthyEarly int `json:"hubHealthyEarly"`
	// GoalSeconds is the goal for replacementAvailable: grace period + toleration + 10 s.
	GoalSeconds float64 `json:"goalSeconds"`
}

// frozenMember is the member the benchmark freezes. Replicas divided with equal weights give their
// remainder to the clusters first by name, so it runs a share of every Deployment.
var frozenMember = devenv.MemberName(1)

// RunFailover starts a hub and pull members, divides Objects Deployments over the members, freezes one
// member (its cluster and its agent, as a hung machine) and times how the hub moves its replicas to the
// others, then resumes it and times the removal of its evicted copies.
func RunFailover(ctx context.Context, o FailoverOptions, out io.Writer, progress func(string)) error {
	if err := o.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	nodePods := max(110, int(o.Replicas)*o.Objects/3+20) // one member may take every replica
	fleet, err := startMemberFleet(ctx, "failover", devenv.UpOptions{Members: o.Members, Mode: devenv.ModePull,
		HubArgs:    []string{"--cluster-grace-period", o.GracePeriod.String()},
		MemberArgs: []string{"--node-pods", strconv.Itoa(nodePods)}}, progress)
	if err != nil {
		return err
	}
	defer fleet.stop()
	frozen, err := memberProcesses(fleet.env, frozenMember)
	if err != nil {
		return err
	}
	// A member left frozen would hold up the fleet's shutdown.
	defer signalAll(frozen, syscall.SIGCONT)

	rec := measure.NewRecorder()
	m := newMoves(frozenMember, o.Replicas, rec)
	if err := m.watch(ctx, fleet.config, fleet.memberConfigs); err != nil {
		return err
	}
	objects := make([]string, o.Objects)
	for i := range objects {
		objects[i] = objectName(i)
	}
	if err := createFailoverObjects(ctx, fleet.admin, o, objects); err != nil {
		return err
	}
	var surviving int
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, o.Timeout, true, func(context.Context) (bool, error) {
		var ok bool
		ok, surviving = m.ready(objects)
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d Deployments to run in full with replicas on %s: %w", o.Objects, frozenMember, err)
	}
	progress(fmt.Sprintf("%d Deployments of %d replicas available, divided over %d members; %d replicas outside %s",
		o.Objects, o.Replicas, o.Members, surviving, frozenMember))
	// The copies to be evicted, by UID: once the member is back, the scheduler may place the objects on it
	// again (a division by weight counts it in), and those new copies are not the evicted ones.
	evicted, err := copiesIn(ctx, fleet.memberConfigs[frozenMember])
	if err != nil {
		return err
	}
	// The hub taints nothing during its own first grace period after it starts; a frozen member misses its
	// grace period and a heartbeat after the freeze, so the taint comes after that in any case.
	if err := signalAll(frozen, syscall.SIGSTOP); err != nil {
		return err
	}
	frozenAt := time.Now()
	m.begin(objects)
	progress(fmt.Sprintf("froze %s (its cluster and its agent)", frozenMember))
	err = rec.WaitCounts(ctx, map[string]int{stageReplacementAvailable: o.Objects}, o.Timeout, func(s string) {
		progress(fmt.Sprintf("+%.0fs %s", time.Since(frozenAt).Seconds(), s))
	})
	least := m.stopTracking()
	if err != nil {
		return fmt.Errorf("failover: %w", err)
	}
	result := FailoverResult{Members: o.Members, Objects: o.Objects, Replicas: o.Replicas,
		GracePeriodSeconds: o.GracePeriod.Seconds(), TolerationSeconds: o.Toleration.Seconds(),
		Failover: map[string]map[string]float64{}, SurvivingReplicas: surviving, MinAvailableReplicas: least, HubHealthyEarly: m.hubEarly(),
		GoalSeconds: (o.GracePeriod + o.Toleration + 10*time.Second).Seconds()}
	if t := m.tainted(); !t.IsZero() {
		result.TaintSeconds = t.Sub(frozenAt).Seconds()
	}
	for _, s := range failoverStages {
		result.Failover[s] = measure.Percentiles(rec.Durations(s))
	}
	progress(fmt.Sprintf("+%.1fs every replacement available (%s; first binding rescheduled at +%.1fs)",
		result.Failover[stageReplacementAvailable]["max"], describeTaint(result.TaintSeconds), slices.Min(rec.Durations(stageRescheduled)).Seconds()))

	if err := signalAll(frozen, syscall.SIGCONT); err != nil {
		return err
	}
	progress(fmt.Sprintf("resumed %s", frozenMember))
	if result.Cleanup, err = timeCleanup(ctx, fleet.memberConfigs[frozenMember], rec, evicted, o.Timeout, progress); err != nil {
		return err
	}
	printFailover(out, &result)
	return writeJSON(o.Out, &result)
}

// memberProcesses returns the member's cluster and its agent.
func memberProcesses(env *devenv.Environment, member string) ([]*process.Process, error) {
	var procs []*process.Process
	for _, p := range env.Processes() {
		if p.Name == member || p.Name == "agent-"+member {
			procs = append(procs, p)
		}
	}
	if len(procs) != 2 {
		return nil, fmt.Errorf("found %d processes of %s, want its cluster and its agent", len(procs), member)
	}
	return procs, nil
}

func signalAll(procs []*process.Process, sig syscall.Signal) error {
	for _, p := range procs {
		if err := p.Signal(sig); err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
	}
	return nil
}

// createFailoverObjects makes the namespace, a policy dividing every Deployment of it over the members and
// tolerating their health taints for o.Toleration, and the Deployments.
func createFailoverObjects(ctx context.Context, hub client.Client, o FailoverOptions, objects []string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}
	if err := hub.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	var members []string
	for i := range o.Members {
		members = append(members, devenv.MemberName(i+1))
	}
	seconds := ptr.To(int64(o.Toleration.Seconds()))
	var tolerations []corev1.Toleration
	for _, key := range []string{clusterv1alpha1.TaintClusterUnreachable, clusterv1alpha1.TaintClusterNotReady} {
		tolerations = append(tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds})
	}
	err := hub.Create(ctx, &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "failover", Namespace: benchNamespace},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
			Placement: policyv1alpha1.Placement{
				ClusterAffinity:    &policyv1alpha1.ClusterAffinity{ClusterNames: members},
				ClusterTolerations: tolerations,
				ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
					ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingDivided,
					ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionWeighted,
				},
			},
		},
	})
	if err != nil {
		return err
	}
	for _, name := range objects {
		if err := hub.Create(ctx, benchDeployment(name, benchNamespace, o.Replicas, "nginx:1")); err != nil {
			return err
		}
	}
	return nil
}

// copiesIn returns the UIDs of the member's Deployments in the benchmark's namespace, by name.
func copiesIn(ctx context.Context, member *rest.Config) (map[string]types.UID, error) {
	kube, err := kubernetes.NewForConfig(member)
	if err != nil {
		return nil, err
	}
	list, err := kube.AppsV1().Deployments(benchNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the Deployments of %s: %w", frozenMember, err)
	}
	copies := map[string]types.UID{}
	for _, d := range list.Items {
		copies[d.Name] = d.UID
	}
	return copies, nil
}

// timeCleanup polls the resumed member until none of the evicted copies (by UID) is left in it, and
// returns the percentiles of the time from now to each one's removal. A copy placed there again after the
// member recovered is another object (another UID), and does not count. A failed list says nothing about
// what is there: it is retried.
func timeCleanup(ctx context.Context, member *rest.Config, rec *measure.Recorder, evicted map[string]types.UID, timeout time.Duration,
	progress func(string)) (map[string]float64, error) {
	cfg := rest.CopyConfig(member)
	cfg.Timeout = 5 * time.Second
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	for name := range evicted {
		rec.Begin(name)
	}
	var last error
	placedAgain := 0
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := kube.AppsV1().Deployments(benchNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		left := map[string]types.UID{}
		for _, d := range list.Items {
			left[d.Name] = d.UID
		}
		placedAgain = 0
		for name, uid := range evicted {
			if left[name] != uid {
				rec.Mark(stageCleanedUp, name, "")
			}
			if left[name] != "" && left[name] != uid {
				placedAgain++
			}
		}
		return len(rec.Durations(stageCleanedUp)) == len(evicted), nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the evicted copies to leave %s (last error: %v): %w", frozenMember, last, err)
	}
	progress(fmt.Sprintf("every evicted copy gone from %s (%d placed there again since it recovered)", frozenMember, placedAgain))
	return measure.Percentiles(rec.Durations(stageCleanedUp)), nil
}

func printFailover(out io.Writer, r *FailoverResult) {
	fmt.Fprintf(out, "%d Deployments × %d replicas over %d members; %s frozen; grace period %.0fs, toleration %.0fs; seconds\n",
		r.Objects, r.Replicas, r.Members, frozenMember, r.GracePeriodSeconds, r.TolerationSeconds)
	fmt.Fprintf(out, "freeze → NoExecute health taint: %s\n", describeTaint(r.TaintSeconds))
	fmt.Fprintf(out, "\n%-34s %8s %8s %8s %8s\n", "", "p50", "p90", "p99", "max")
	for _, s := range failoverStages {
		q := r.Failover[s]
		fmt.Fprintf(out, "%-34s %8.3f %8.3f %8.3f %8.3f\n", "freeze → "+s, q["p50"], q["p90"], q["p99"], q["max"])
	}
	q := r.Cleanup
	fmt.Fprintf(out, "%-34s %8.3f %8.3f %8.3f %8.3f\n", "resume → evicted copy gone", q["p50"], q["p90"], q["p99"], q["max"])
	gap := "no gap"
	if r.MinAvailableReplicas < r.SurvivingReplicas {
		gap = "GAP"
	}
	fmt.Fprintf(out, "\navailable replicas on the live members during the move: at least %d; surviving share %d (%s)\n",
		r.MinAvailableReplicas, r.SurvivingReplicas, gap)
	if r.HubHealthyEarly > 0 {
		fmt.Fprintf(out, "the hub called %d of %d objects Healthy in their new placement before the members ran it in full\n",
			r.HubHealthyEarly, r.Objects)
	}
	verdict := "met"
	if r.Failover[stageReplacementAvailable]["max"] > r.GoalSeconds {
		verdict = "missed"
	}
	fmt.Fprintf(out, "every replacement available after %.1f s: goal ≤ %.0f s (grace + toleration + 10 s) %s\n",
		r.Failover[stageReplacementAvailable]["max"], r.GoalSeconds, verdict)
}

func describeTaint(seconds float64) string {
	if seconds == 0 {
		return "no health taint seen"
	}
	return fmt.Sprintf("tainted at +%.1fs", seconds)
}
