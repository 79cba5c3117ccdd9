package binding

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/override"
	"github.com/flotilla-io/flotilla/internal/placement"
	"github.com/flotilla-io/flotilla/internal/rollout"
)

// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;patch;delete

// progressive says whether a binding's changes roll out in waves.
func progressive(spec *workv1alpha1.ResourceBindingSpec) bool {
	return spec.Rollout != nil && spec.Rollout.Type != "" && spec.Rollout.Type != policyv1alpha1.RolloutAll
}

// wave is what a progressive rollout renders now: per cluster, the template and override policies its Work
// is rendered from, and the revision hash it carries.
type wave struct {
	decision rollout.Decision
	// stable is the stable revision's template and policies; nil when it is the target or its
	// ControllerRevision is gone.
	stable         *unstructured.Unstructured
	stablePolicies []override.Policy
	targetHash     string
}

// source returns what a cluster's Work is rendered from, and false when its Work is left as it is (a cluster
// the rollout has not reached whose stable revision is no longer kept).
func (w *wave) source(cluster string, template *unstructured.Unstructured, policies []override.Policy, hasWork bool) (*unstructured.Unstructured, []override.Policy, string, bool) {
	if w == nil {
		return template, policies, "", true
	}
	st := w.decision.Status
	if w.decision.OnTarget[cluster] || st.StableHash == st.TargetHash {
		return template, policies, w.targetHash, true
	}
	if w.stable != nil {
		return w.stable, w.stablePolicies, st.StableHash, true
	}
	// The stable revision's content is gone: a cluster that runs something keeps it, a new one gets the
	// target (there is nothing else to give it).
	return template, policies, w.targetHash, !hasWork
}

// planWave records the template's revision and decides which clusters run it.
func (r *Controller[T]) planWave(ctx context.Context, b T, template *unstructured.Unstructured, policies []override.Policy, works []workv1alpha1.Work) (*wave, error) {
	spec := b.BindingSpec()
	content, hash, err := rollout.Snapshot(template, policies)
	if err != nil {
		return nil, err
	}
	// The rollout's state is read from the API server, not the cache: a decision made on a status the cache
	// has not caught up with would count a wave twice and restart the clocks of minSuccessTime.
	fresh := r.New()
	if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(b), fresh); err != nil {
		return nil, err
	}
	*b.BindingStatus() = *fresh.BindingStatus()
	prev := b.BindingStatus().Rollout
	limit := policyv1alpha1.DefaultRevisionHistoryLimit
	if spec.Rollout.RevisionHistoryLimit != nil {
		limit = int(*spec.Rollout.RevisionHistoryLimit)
	}
	var keep []string
	if prev != nil {
		keep = append(keep, prev.StableHash, prev.TargetHash)
	}
	number, err := rollout.Record(ctx, r.Client, r.Reader, template, spec.Resource, b.GetName(), content, hash, limit, keep...)
	if err != nil {
		return nil, fmt.Errorf("recording revision %s: %w", hash, err)
	}
	groups, err := r.rolloutGroups(ctx, b.GetNamespace(), spec)
	if err != nil {
		return nil, err
	}
	clusters := make([]rollout.Cluster, 0, len(spec.Clusters))
	byCluster := worksByCluster(works)
	for _, t := range spec.Clusters {
		c := rollout.Cluster{Name: t.Name}
		if w := byCluster[t.Name]; w != nil {
			c.Hash, c.Healthy = w.Annotations[workv1alpha1.AnnotationRevision], rollout.Healthy(w)
		}
		clusters = append(clusters, c)
	}
	annotations := b.GetAnnotations()
	decision, err := rollout.Plan(rollout.Input{Strategy: spec.Rollout, Groups: groups, Clusters: clusters, Previous: prev,
		TargetHash: hash, TargetRevision: number, Now: r.now(),
		Paused:    annotations[workv1alpha1.AnnotationRolloutPaused] == "true",
		AllAtOnce: annotations[workv1alpha1.AnnotationRolloutAllAtOnce] == hash})
	if err != nil {
		return nil, err
	}
	decision.Status.ObservedTemplateGeneration = template.GetGeneration()
	w := &wave{decision: decision, targetHash: hash}
	if st := decision.Status; st.StableHash != st.TargetHash {
		revisions, err := rollout.List(ctx, r.Client, spec.Resource, b.GetName())
		if err != nil {
			return nil, err
		}
		if cr := rollout.Find(revisions, st.StableHash); cr != nil {
			rev, err := rollout.Decode(cr)
			if err != nil {
				return nil, err
			}
			w.stable, w.stablePolicies = rev.Apply(template), rev.Policies()
		}
	}
	return w, nil
}

// rolloutGroups are the decision groups of the binding's clusters: the Placement's when the policy refers to
// one, else the rollout's own.
func (r *Controller[T]) rolloutGroups(ctx context.Context, namespace string, spec *workv1alpha1.ResourceBindingSpec) ([]rollout.Group, error) {
	strategy := clusterv1alpha1.GroupStrategy{DecisionGroups: spec.Rollout.DecisionGroups, ClustersPerDecisionGroup: spec.Rollout.ClustersPerDecisionGroup}
	if spec.PlacementRef != nil {
		p := &clusterv1alpha1.Placement{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: spec.PlacementRef.Name}, p); client.IgnoreNotFound(err) != nil {
			return nil, err
		} else if err == nil {
			strategy = p.Spec.DecisionStrategy.GroupStrategy
		}
	}
	clusters := make([]*clusterv1alpha1.Cluster, 0, len(spec.Clusters))
	for _, t := range spec.Clusters {
		c := &clusterv1alpha1.Cluster{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: t.Name}, c); client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		c.Name = t.Name // a Cluster being removed still has its place, without labels
		clusters = append(clusters, c)
	}
	groups, err := placement.Groups(strategy, clusters)
	if err != nil {
		return nil, err
	}
	out := make([]rollout.Group, len(groups))
	for i, g := range groups {
		out[i] = rollout.Group{Name: g.Name, Clusters: g.Clusters}
		if g.Name == "" {
			out[i].Name = strconv.Itoa(i)
		}
	}
	return out, nil
}

// rolloutConditions say where the rollout stands.
func rolloutConditions(generation int64, d rollout.Decision, paused bool) []metav1.Condition {
	st := d.Status
	counts := map[workv1alpha1.RolloutState]int{}
	var failed []string
	for _, c := range st.Clusters {
		counts[c.State]++
		if c.State == workv1alpha1.RolloutFailed {
			failed = append(failed, c.Name)
		}
	}
	progress := fmt.Sprintf("revision %d: %d of %d clusters succeeded", st.TargetRevision, counts[workv1alpha1.RolloutSucceeded], len(st.Clusters))
	cond := func(t string, ok bool, reason, message string) metav1.Condition {
		c := metav1.Condition{Type: t, Status: metav1.ConditionFalse, Reason: reason, Message: message, ObservedGeneration: generation}
		if ok {
			c.Status = metav1.ConditionTrue
		}
		return c
	}
	failedMsg := "no cluster failed"
	if len(failed) > 0 {
		failedMsg = "not healthy within progressDeadline: " + clusterv1alpha1.ListInMessage(failed)
	}
	pausedMsg := "not paused"
	if paused {
		pausedMsg = "paused: no cluster is started until `flotilla rollout resume`"
	}
	return []metav1.Condition{
		cond(workv1alpha1.ConditionRolloutProgressing, !d.Failed && !d.Complete, reason(!d.Failed && !d.Complete, "Progressing", "NotProgressing"),
			fmt.Sprintf("%s; wave %d; %d progressing, %d pending", progress, st.Wave, counts[workv1alpha1.RolloutProgressing], counts[workv1alpha1.RolloutPending])),
		cond(workv1alpha1.ConditionRolloutComplete, d.Complete, reason(d.Complete, "Complete", "NotComplete"), progress),
		cond(workv1alpha1.ConditionRolloutFailed, d.Failed, reason(d.Failed, "TooManyFailures", "WithinBudget"), failedMsg),
		cond(workv1alpha1.ConditionRolloutPaused, paused, reason(paused, "Paused", "NotPaused"), pausedMsg),
	}
}

func reason(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

// recordWave puts an event on the template for a started wave, a failed or a completed rollout.
func (r *Controller[T]) recordWave(template *unstructured.Unstructured, before *workv1alpha1.RolloutStatus, wasFailed bool, d rollout.Decision) {
	if r.Recorder == nil {
		return
	}
	st := d.Status
	if len(d.Started) > 0 {
		r.Recorder.Eventf(template, nil, "Normal", "RolloutWave", "Rollout", "wave %d: revision %d to %s",
			st.Wave, st.TargetRevision, strings.Join(d.Started, ", "))
	}
	wasFailed = wasFailed && before != nil && before.TargetHash == st.TargetHash
	if d.Failed && !wasFailed {
		r.Recorder.Eventf(template, nil, "Warning", "RolloutFailed", "Rollout", "revision %d stopped: too many clusters failed; the clusters not reached keep revision %d",
			st.TargetRevision, st.StableRevision)
	}
	if d.Complete && before != nil && before.StableHash != st.TargetHash {
		r.Recorder.Eventf(template, nil, "Normal", "RolloutComplete", "Rollout", "revision %d runs in every cluster", st.TargetRevision)
	}
}

// sameRollout says whether the binding's status already says what the decision does.
func sameRollout(current *workv1alpha1.RolloutStatus, want *workv1alpha1.RolloutStatus) bool {
	return equality.Semantic.DeepEqual(current, want)
}
