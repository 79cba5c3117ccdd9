package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
)

// rolloutPoll is how often flotilla rollout status --watch reads the binding.
const rolloutPoll = time.Second

func newRolloutStatusCommand() *cobra.Command {
	f := &rolloutFlags{}
	var watch bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "status KIND/NAME",
		Short: "Show a rollout's progress cluster by cluster and wait until it completes or fails",
		Long: "Prints where the rollout stands: the revision it brings, the revision clusters not yet reached run, and\n" +
			"each cluster's state in the order the rollout reaches them. With --watch (the default) it then prints\n" +
			"each step as it happens and exits 0 once RolloutComplete, non-zero with the reason once RolloutFailed.\n" +
			"A template whose policy updates every cluster at once is followed until FullyApplied and Healthy.",
		Example: "  flotilla rollout status deployment/web -n shop\n  flotilla rollout status deployment/web --watch=false",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout < 0 {
				return fmt.Errorf("--timeout %s: must not be negative", timeout)
			}
			t, err := f.resolve(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if err := printRollout(out, t, t.binding, time.Now()); err != nil || !watch {
				return err
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			return waitRollout(ctx, cmdutil.NewProgress(out), t, rolloutPoll)
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVarP(&watch, "watch", "w", true, "wait until the rollout completes or fails, printing each step")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up waiting after this long (0: wait as long as it takes)")
	return cmd
}

// printRollout prints where a binding's rollout stands.
func printRollout(out io.Writer, t *rolloutTarget, b workv1alpha1.Binding, now time.Time) error {
	spec, status := b.BindingSpec(), b.BindingStatus()
	if !progressive(b) {
		typ := policyv1alpha1.RolloutAll
		if spec.Rollout != nil && spec.Rollout.Type != "" {
			typ = spec.Rollout.Type
		}
		fmt.Fprintf(out, "%s has no progressive rollout (its policy's spec.rollout.type is %s): a change reaches every cluster at once\n", t, typ)
		for _, c := range followed(b) {
			printCondition(out, status, c)
		}
		return nil
	}
	r := status.Rollout
	if r == nil {
		fmt.Fprintf(out, "%s: %s rollout, not started: the hub has not recorded a revision yet\n", t, spec.Rollout.Type)
		return nil
	}
	fmt.Fprintf(out, "%s: %s rollout of revision %d (%s), wave %d; clusters not yet reached run revision %d (%s)\n",
		t, spec.Rollout.Type, r.TargetRevision, orDash(r.TargetHash), r.Wave, r.StableRevision, orDash(r.StableHash))
	for _, c := range followed(b) {
		printCondition(out, status, c)
	}
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "GROUP\tCLUSTER\tREVISION\tSTATE\tSINCE\tHEALTHY-FOR")
	for _, c := range r.Clusters {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\n", orDash(c.Group), c.Name, c.Revision, c.State, sinceOf(c.Since, now), sinceOf(c.HealthySince, now))
	}
	return w.Flush()
}

// followed are the conditions flotilla rollout status reports: the rollout's, or FullyApplied and Healthy
// for a binding without a progressive rollout.
func followed(b workv1alpha1.Binding) []string {
	if !progressive(b) {
		return []string{workv1alpha1.ConditionFullyApplied, workv1alpha1.ConditionHealthy}
	}
	return []string{workv1alpha1.ConditionRolloutProgressing, workv1alpha1.ConditionRolloutComplete,
		workv1alpha1.ConditionRolloutPaused, workv1alpha1.ConditionRolloutFailed}
}

// printCondition prints one of the binding's conditions, or that it has none of the type.
func printCondition(out io.Writer, s *workv1alpha1.ResourceBindingStatus, t string) {
	if c := meta.FindStatusCondition(s.Conditions, t); c != nil {
		fmt.Fprintf(out, "  %s=%s  %s\n", c.Type, c.Status, c.Message)
	}
}

func sinceOf(t *metav1.Time, now time.Time) string {
	if t == nil {
		return "-"
	}
	return now.Sub(t.Time).Round(time.Second).String()
}

// waitRollout reads the binding every poll, prints each step of the rollout, and returns once it completed
// (nil) or failed (its message).
func waitRollout(ctx context.Context, p *cmdutil.Progress, t *rolloutTarget, poll time.Duration) error {
	prev := t.binding
	// stopped is the error when ctx ends, whichever read or wait it ends in.
	stopped := func() error {
		return fmt.Errorf("%s: stopped waiting (%w): %s", t, context.Cause(ctx), pendingMessage(prev))
	}
	for {
		// A status of the content before the template's latest change says nothing yet, not even a failure.
		current, err := t.observedLatest(ctx, prev)
		if err != nil && ctx.Err() != nil {
			return stopped()
		}
		if err != nil {
			return err
		}
		done, err := rolloutDone(prev)
		if err != nil && current {
			return fmt.Errorf("%s: %w", t, err)
		}
		done = done && current
		if done {
			// The binding may still report the rollout before the template's latest change: the template's
			// status catches up with its generation only once every cluster runs it.
			if caughtUp, err := t.caughtUp(ctx); err != nil && ctx.Err() != nil {
				return stopped()
			} else if err != nil {
				return err
			} else if caughtUp {
				p.Step(doneMessage(prev))
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return stopped()
		case <-time.After(poll):
		}
		cur := prev.DeepCopyObject().(workv1alpha1.Binding)
		if err := t.c.Get(ctx, client.ObjectKeyFromObject(prev), cur); err != nil {
			if ctx.Err() != nil {
				continue
			}
			return fmt.Errorf("%s: reading its binding: %w", t, err)
		}
		for _, step := range rolloutSteps(prev, cur) {
			p.Step(step)
		}
		prev = cur
	}
}

// observedLatest says whether the binding's rollout status speaks of the template's current generation
// (always true for a binding without a progressive rollout).
func (t *rolloutTarget) observedLatest(ctx context.Context, b workv1alpha1.Binding) (bool, error) {
	s := b.BindingStatus().Rollout
	if !progressive(b) || s == nil {
		return true, nil
	}
	template := &unstructured.Unstructured{}
	template.SetGroupVersionKind(t.gvk)
	if err := t.c.Get(ctx, t.key, template); err != nil {
		return false, fmt.Errorf("reading %s: %w", t, err)
	}
	return s.ObservedTemplateGeneration >= template.GetGeneration(), nil
}

// caughtUp says whether the template's status.observedGeneration (when it has one) is its generation, as
// kubectl rollout status asks: the hub keeps it behind until every cluster runs the template's content.
func (t *rolloutTarget) caughtUp(ctx context.Context) (bool, error) {
	template := &unstructured.Unstructured{}
	template.SetGroupVersionKind(t.gvk)
	if err := t.c.Get(ctx, t.key, template); err != nil {
		return false, fmt.Errorf("reading %s: %w", t, err)
	}
	observed, found, err := unstructured.NestedInt64(template.Object, "status", "observedGeneration")
	return err != nil || !found || observed >= template.GetGeneration(), nil
}

// rolloutDone says whether the binding's rollout is over: complete (true), failed (the error), or not yet.
// A binding without a progressive rollout is done once applied and healthy everywhere.
func rolloutDone(b workv1alpha1.Binding) (bool, error) {
	s := b.BindingStatus()
	if !progressive(b) {
		return meta.IsStatusConditionTrue(s.Conditions, workv1alpha1.ConditionFullyApplied) &&
			meta.IsStatusConditionTrue(s.Conditions, workv1alpha1.ConditionHealthy), nil
	}
	if s.Rollout == nil {
		return false, nil
	}
	if c := meta.FindStatusCondition(s.Conditions, workv1alpha1.ConditionRolloutFailed); c != nil && c.Status == metav1.ConditionTrue {
		return false, fmt.Errorf("rollout of revision %d failed: %s", s.Rollout.TargetRevision, c.Message)
	}
	return meta.IsStatusConditionTrue(s.Conditions, workv1alpha1.ConditionRolloutComplete), nil
}

func doneMessage(b workv1alpha1.Binding) string {
	s := b.BindingStatus()
	if !progressive(b) {
		return "applied and healthy in every cluster"
	}
	return fmt.Sprintf("rollout of revision %d complete: every cluster runs it", s.Rollout.TargetRevision)
}

// pendingMessage says how far a rollout got, for a wait that ends before it does.
func pendingMessage(b workv1alpha1.Binding) string {
	s := b.BindingStatus()
	if !progressive(b) || s.Rollout == nil {
		return fmt.Sprintf("FullyApplied=%s Healthy=%s", conditionStatus(s, workv1alpha1.ConditionFullyApplied), conditionStatus(s, workv1alpha1.ConditionHealthy))
	}
	succeeded := 0
	for _, c := range s.Rollout.Clusters {
		if c.State == workv1alpha1.RolloutSucceeded {
			succeeded++
		}
	}
	return fmt.Sprintf("revision %d succeeded on %d of %d clusters", s.Rollout.TargetRevision, succeeded, len(s.Rollout.Clusters))
}

// rolloutSteps are what changed between two readings of a binding: a new target revision or wave, a cluster's
// revision or state, a condition.
func rolloutSteps(prev, cur workv1alpha1.Binding) []string {
	var steps []string
	p, c := prev.BindingStatus(), cur.BindingStatus()
	if r := c.Rollout; r != nil {
		old := p.Rollout
		if old == nil {
			old = &workv1alpha1.RolloutStatus{}
		}
		if r.TargetHash != old.TargetHash {
			steps = append(steps, fmt.Sprintf("rolling out revision %d (%s)", r.TargetRevision, r.TargetHash))
		}
		if r.Wave != old.Wave {
			steps = append(steps, fmt.Sprintf("wave %d", r.Wave))
		}
		was := map[string]workv1alpha1.ClusterRollout{}
		for _, cl := range old.Clusters {
			was[cl.Name] = cl
		}
		for _, cl := range r.Clusters {
			if w, ok := was[cl.Name]; !ok || w.State != cl.State || w.Revision != cl.Revision {
				steps = append(steps, fmt.Sprintf("%s: %s on revision %d", cl.Name, cl.State, cl.Revision))
			}
		}
	}
	for _, t := range followed(cur) {
		cond, old := meta.FindStatusCondition(c.Conditions, t), meta.FindStatusCondition(p.Conditions, t)
		if cond != nil && (old == nil || old.Status != cond.Status || old.Message != cond.Message) {
			steps = append(steps, fmt.Sprintf("%s=%s  %s", cond.Type, cond.Status, cond.Message))
		}
	}
	return steps
}
