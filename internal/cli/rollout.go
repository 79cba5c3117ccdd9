package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/rollout"
)

// rolloutManager is the field manager of what flotilla rollout writes: the pause and all-at-once annotations
// of a binding, and a template an undo puts back.
const rolloutManager = "flotilla-rollout"

func newRolloutCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Follow, pause, resume and undo a template's progressive rollout across its clusters",
		Long: "Shaped like kubectl rollout, for a template whose propagation policy sets spec.rollout: status follows\n" +
			"the rollout wave by wave, history lists the revisions the hub keeps, pause and resume hold and release\n" +
			"its next wave, and undo puts an earlier revision back on the hub template.",
	}
	cmd.AddCommand(newRolloutStatusCommand(), newRolloutHistoryCommand(), newRolloutPauseCommand(true), newRolloutPauseCommand(false),
		newRolloutUndoCommand())
	return cmd
}

// rolloutFlags are the flags every flotilla rollout verb has: the hub's and the template's namespace.
type rolloutFlags struct {
	hub       cmdutil.HubFlags
	namespace string
}

func (f *rolloutFlags) add(cmd *cobra.Command) {
	f.hub.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "", "namespace of the template (default: the kubeconfig context's)")
}

// rolloutTarget is a template named on the command line, and its binding.
type rolloutTarget struct {
	c       client.Client
	gvk     schema.GroupVersionKind
	key     client.ObjectKey // the template's
	binding workv1alpha1.Binding
}

// resolve finds the template KIND/NAME names (the kind resolved as kubectl does) and its binding.
func (f *rolloutFlags) resolve(ctx context.Context, arg string) (*rolloutTarget, error) {
	target, err := parseKindName(arg)
	if err != nil {
		return nil, err
	}
	namespace := f.namespace
	if namespace == "" {
		if namespace, err = f.hub.Namespace(); err != nil {
			return nil, err
		}
	}
	_, c, kube, err := f.hub.Clients()
	if err != nil {
		return nil, err
	}
	gvk, namespaced, err := templateKind(kube.Discovery(), target.kind)
	if err != nil {
		return nil, err
	}
	t := &rolloutTarget{c: c, gvk: gvk, key: client.ObjectKey{Name: target.name}}
	var b workv1alpha1.Binding = &workv1alpha1.ClusterResourceBinding{}
	bkey := client.ObjectKey{Name: workv1alpha1.BindingName(gvk.GroupKind(), target.name)}
	if namespaced {
		t.key.Namespace, bkey.Namespace = namespace, namespace
		b = &workv1alpha1.ResourceBinding{}
	}
	if err := c.Get(ctx, bkey, b); apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%s is not placed by any policy: it has no binding %s", t, bkey.Name)
	} else if err != nil {
		return nil, fmt.Errorf("%s: reading its binding: %w", t, err)
	}
	t.binding = b
	return t, nil
}

// name names the template as kubectl rollout does: deployment.apps/web.
func (t *rolloutTarget) name() string {
	s := strings.ToLower(t.gvk.Kind)
	if t.gvk.Group != "" {
		s += "." + t.gvk.Group
	}
	return s + "/" + t.key.Name
}

// String is the template's name and namespace, for errors.
func (t *rolloutTarget) String() string {
	if t.key.Namespace != "" {
		return t.name() + " in " + t.key.Namespace
	}
	return t.name()
}

// progressive says whether the binding's policy rolls changes out in waves.
func progressive(b workv1alpha1.Binding) bool {
	r := b.BindingSpec().Rollout
	return r != nil && (r.Type == policyv1alpha1.RolloutProgressive || r.Type == policyv1alpha1.RolloutProgressivePerGroup)
}

// revisions are the template's ControllerRevisions, oldest first.
func (t *rolloutTarget) revisions(ctx context.Context) ([]appsv1.ControllerRevision, error) {
	revs, err := rollout.List(ctx, t.c, t.binding.BindingSpec().Resource, t.binding.GetName())
	if err != nil {
		return nil, fmt.Errorf("%s: listing its revisions: %w", t, err)
	}
	if len(revs) == 0 {
		return nil, fmt.Errorf("%s has no revisions: the hub records them while its policy sets spec.rollout", t)
	}
	return revs, nil
}

// annotate sets (or, with value nil, removes) an annotation of the target's binding.
func (t *rolloutTarget) annotate(ctx context.Context, key string, value *string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, key)
	if value != nil {
		patch = fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, *value)
	}
	if err := t.c.Patch(ctx, t.binding, client.RawPatch(types.MergePatchType, []byte(patch)), client.FieldOwner(rolloutManager)); err != nil {
		return fmt.Errorf("%s: annotating its binding %s: %w", t, t.binding.GetName(), err)
	}
	return nil
}

func newRolloutPauseCommand(pause bool) *cobra.Command {
	f := &rolloutFlags{}
	verb, short := "resume", "Let a paused rollout start its next wave"
	if pause {
		verb, short = "pause", "Hold a rollout's next wave: clusters already updating finish, no other cluster starts"
	}
	cmd := &cobra.Command{
		Use:     verb + " KIND/NAME",
		Short:   short,
		Example: "  flotilla rollout " + verb + " deployment/web -n shop",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := f.resolve(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			paused := t.binding.GetAnnotations()[workv1alpha1.AnnotationRolloutPaused] == "true"
			if paused == pause {
				fmt.Fprintf(cmd.OutOrStdout(), "%s already %sd\n", t.name(), verb)
				return nil
			}
			var value *string
			if pause {
				value = new(string)
				*value = "true"
			}
			if err := t.annotate(cmd.Context(), workv1alpha1.AnnotationRolloutPaused, value); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %sd\n", t.name(), verb)
			if !progressive(t.binding) {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: its policy has no progressive rollout (spec.rollout.type Progressive or ProgressivePerGroup): changes reach every cluster at once whatever %s says\n", verb)
			}
			return nil
		},
	}
	f.add(cmd)
	return cmd
}
