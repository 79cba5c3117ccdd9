package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
)

// newClusterSetCommand is flotilla clusterset: create sets, put clusters in them, grant them to namespaces
// and list them.
func newClusterSetCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "clusterset",
		Short: "Group clusters into ClusterSets and grant sets to namespaces",
		Long: `A ClusterSet groups clusters; a ClusterSetBinding grants a set to a namespace, whose policies then place
only on the set's clusters. Binding a set needs create on clustersets/bind for it.`,
	}
	cmd.AddCommand(newClusterSetCreateCommand(), newClusterSetMembershipCommand(true), newClusterSetMembershipCommand(false),
		newClusterSetBindCommand(true), newClusterSetBindCommand(false), newClusterSetGetCommand())
	return cmd
}

func newClusterSetCreateCommand() *cobra.Command {
	var hub cmdutil.HubFlags
	var selector string
	cmd := &cobra.Command{
		Use:   "create NAME [--selector SELECTOR]",
		Short: "Create a ClusterSet: of the clusters labelled with its name (default), or of those a label selector picks",
		Example: `  flotilla clusterset create prod                     # then: flotilla clusterset add prod member1 member2
  flotilla clusterset create gpu --selector accelerator=nvidia`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if bad := validation.IsDNS1123Subdomain(args[0]); len(bad) > 0 {
				return fmt.Errorf("ClusterSet name %q: %s", args[0], bad[0])
			}
			set := &clusterv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: args[0]}}
			set.Spec.ClusterSelector.SelectorType = clusterv1alpha1.ExclusiveClusterSetLabel
			if cmd.Flags().Changed("selector") {
				sel, err := metav1.ParseToLabelSelector(selector)
				if err != nil {
					return fmt.Errorf("--selector %q: %w", selector, err)
				}
				set.Spec.ClusterSelector = clusterv1alpha1.ClusterSetSelector{SelectorType: clusterv1alpha1.LabelSelector, LabelSelector: sel}
			}
			_, c, _, err := hub.Clients()
			if err != nil {
				return err
			}
			if err := c.Create(cmd.Context(), set); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "clusterset.cluster.flotilla.io/%s created\n", set.Name)
			return nil
		},
	}
	hub.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "label selector of the set's clusters (sets of this kind may overlap); without it the set holds the clusters labelled "+clusterv1alpha1.LabelClusterSet+"=NAME")
	return cmd
}

// newClusterSetMembershipCommand is flotilla clusterset add (add true) or remove: it sets or clears the
// exclusive label of clusters.
func newClusterSetMembershipCommand(add bool) *cobra.Command {
	var hub cmdutil.HubFlags
	use, short := "add SET CLUSTER...", "Put clusters in an exclusive ClusterSet (moving them out of the one they were in)"
	if !add {
		use, short = "remove SET CLUSTER...", "Take clusters out of an exclusive ClusterSet (back to the default set)"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, c, _, err := hub.Clients()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if err := exclusiveSet(ctx, c, args[0]); err != nil {
				return err
			}
			for _, name := range args[1:] {
				msg, err := setMembership(ctx, c, args[0], name, add)
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), msg)
			}
			return nil
		},
	}
	hub.AddFlags(cmd.Flags())
	return cmd
}

// exclusiveSet returns an error unless set exists and picks its clusters by the exclusive label.
func exclusiveSet(ctx context.Context, c client.Client, name string) error {
	set := &clusterv1alpha1.ClusterSet{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, set); apierrors.IsNotFound(err) {
		return fmt.Errorf("ClusterSet %s does not exist (flotilla clusterset create %s)", name, name)
	} else if err != nil {
		return err
	}
	if set.Spec.ClusterSelector.SelectorType == clusterv1alpha1.LabelSelector {
		return fmt.Errorf("ClusterSet %s picks its clusters by a label selector (%s), not by the label %s: change the clusters' labels instead",
			name, selectorString(set), clusterv1alpha1.LabelClusterSet)
	}
	return nil
}

// setMembership puts cluster in set (add) or takes it out, by its exclusive label, and says what it did.
func setMembership(ctx context.Context, c client.Client, set, name string, add bool) (string, error) {
	cluster := &clusterv1alpha1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, cluster); err != nil {
		return "", err
	}
	current, labelled := cluster.Labels[clusterv1alpha1.LabelClusterSet]
	var patch string
	msg := fmt.Sprintf("cluster %s is now in ClusterSet %s", name, set)
	switch {
	case add && current == set:
		return fmt.Sprintf("cluster %s is already in ClusterSet %s", name, set), nil
	case add:
		patch = fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, clusterv1alpha1.LabelClusterSet, set)
		if labelled && current != clusterv1alpha1.ClusterSetDefault {
			msg += fmt.Sprintf(" (it left ClusterSet %s)", current)
		}
	case set == clusterv1alpha1.ClusterSetDefault && (!labelled || current == set):
		return "", fmt.Errorf("cluster %s leaves the default ClusterSet by joining another: flotilla clusterset add SET %s", name, name)
	case current != set:
		return "", fmt.Errorf("cluster %s is not in ClusterSet %s (it is in %s)", name, set, orDefaultSet(current))
	default:
		patch = fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, clusterv1alpha1.LabelClusterSet)
		msg = fmt.Sprintf("cluster %s left ClusterSet %s: it is in the default set", name, set)
	}
	if err := c.Patch(ctx, cluster, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return "", err
	}
	return msg, nil
}

// orDefaultSet is the exclusive set a cluster labelled label is in.
func orDefaultSet(label string) string {
	if label == "" {
		return clusterv1alpha1.ClusterSetDefault
	}
	return label
}

// selectorString writes a set's selector as kubectl -l would.
func selectorString(set *clusterv1alpha1.ClusterSet) string {
	if set.Spec.ClusterSelector.SelectorType != clusterv1alpha1.LabelSelector {
		if set.Name == clusterv1alpha1.ClusterSetDefault {
			return clusterv1alpha1.LabelClusterSet + " unset or default"
		}
		return clusterv1alpha1.LabelClusterSet + "=" + set.Name
	}
	sel, err := set.Selector()
	if err != nil {
		return "invalid: " + err.Error()
	}
	if s := sel.String(); s != "" {
		return s
	}
	return "every cluster"
}

// clusterSetsOf lists the ClusterSets cluster is in, for describe cluster.
func clusterSetsOf(ctx context.Context, c client.Client, cluster *clusterv1alpha1.Cluster) string {
	sets := &clusterv1alpha1.ClusterSetList{}
	if err := c.List(ctx, sets); err != nil {
		return "unknown (" + err.Error() + ")"
	}
	var in []string
	for i := range sets.Items {
		if sets.Items[i].Contains(cluster.Labels) {
			in = append(in, sets.Items[i].Name)
		}
	}
	return orDash(strings.Join(in, ", "))
}
