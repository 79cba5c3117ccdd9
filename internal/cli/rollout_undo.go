package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/rollout"
)

// undoRevision picks the revision an undo puts back: the one numbered to, or (to 0) the newest before the
// current one, which is the rollout's target (current, 0 when the binding records none: the newest).
func undoRevision(revs []appsv1.ControllerRevision, current, to int64) (*appsv1.ControllerRevision, error) {
	if to > 0 {
		return revisionNumbered(revs, to)
	}
	if current == 0 {
		current = revs[len(revs)-1].Revision
	}
	var before *appsv1.ControllerRevision
	for i := range revs {
		if revs[i].Revision < current {
			before = &revs[i]
		}
	}
	if before == nil {
		return nil, fmt.Errorf("no revision before revision %d to go back to", current)
	}
	return before, nil
}

// restore puts a revision's content on the live template: its identity (name, namespace, uid, owners) stays,
// the rest is the revision's. The update is conditional on the resourceVersion read, so an edit made
// meanwhile is not lost: it fails with a conflict instead.
func (t *rolloutTarget) restore(ctx context.Context, rev *rollout.Revision) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(t.gvk)
	if err := t.c.Get(ctx, t.key, live); apierrors.IsNotFound(err) {
		return fmt.Errorf("template %s not found: undo puts a revision back on the hub template, which must exist", t)
	} else if err != nil {
		return fmt.Errorf("reading %s: %w", t, err)
	}
	restored := rev.Apply(live)
	if err := t.c.Update(ctx, restored, client.FieldOwner(rolloutManager)); apierrors.IsConflict(err) {
		return fmt.Errorf("%s changed while undo read it; nothing was written: run undo again", t)
	} else if err != nil {
		return fmt.Errorf("writing %s: %w", t, err)
	}
	return nil
}

func newRolloutUndoCommand() *cobra.Command {
	f := &rolloutFlags{}
	var to int64
	var allAtOnce bool
	cmd := &cobra.Command{
		Use:   "undo KIND/NAME",
		Short: "Put an earlier revision back on the hub template; it rolls out like any change",
		Long: "Puts a revision the hub keeps back on the hub template: by default the one before the rollout's target,\n" +
			"or --to-revision N. It then rolls out under the policy's strategy, wave by wave, or with --all-at-once to\n" +
			"every cluster at once.",
		Example: "  flotilla rollout undo deployment/web -n shop\n  flotilla rollout undo deployment/web --to-revision 2 --all-at-once",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to < 0 {
				return fmt.Errorf("--to-revision %d: want a revision number", to)
			}
			ctx := cmd.Context()
			t, err := f.resolve(ctx, args[0])
			if err != nil {
				return err
			}
			revs, err := t.revisions(ctx)
			if err != nil {
				return err
			}
			status := t.binding.BindingStatus().Rollout
			if status == nil {
				status = &workv1alpha1.RolloutStatus{}
			}
			cr, err := undoRevision(revs, status.TargetRevision, to)
			if err != nil {
				return fmt.Errorf("%s: %w", t, err)
			}
			rev, err := rollout.Decode(cr)
			if err != nil {
				return err
			}
			hash := cr.Labels[rollout.LabelHash]
			if allAtOnce {
				if err := t.annotate(ctx, workv1alpha1.AnnotationRolloutAllAtOnce, &hash); err != nil {
					return err
				}
			}
			if err := t.restore(ctx, rev); err != nil {
				return err
			}
			how := "under its rollout strategy"
			if allAtOnce {
				how = "to every cluster at once"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s rolled back to revision %d (%s), %s\n", t.name(), cr.Revision, hash, how)
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().Int64Var(&to, "to-revision", 0, "the revision to go back to (default: the one before the rollout's target)")
	cmd.Flags().BoolVar(&allAtOnce, "all-at-once", false, "bring the revision to every cluster at once instead of wave by wave")
	return cmd
}
