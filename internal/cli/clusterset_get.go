package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
)

// newClusterSetGetCommand is flotilla clusterset get: the sets with their counts, or with -n/-A the
// bindings of namespaces and the clusters each grants (what a tenant who may not list Clusters can read).
func newClusterSetGetCommand() *cobra.Command {
	var hub cmdutil.HubFlags
	var output listOutput
	var namespace string
	var allNamespaces bool
	cmd := &cobra.Command{
		Use:   "get [NAME...] [-n NAMESPACE | -A]",
		Short: "List ClusterSets with their clusters, or a namespace's bindings and the clusters they grant",
		Example: `  flotilla clusterset get -o wide
  flotilla clusterset get -n team-a -o wide    # where team-a may place
  flotilla clusterset get -A`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := output.validate(); err != nil {
				return err
			}
			if bad := validation.IsDNS1123Label(namespace); namespace != "" && len(bad) > 0 {
				return fmt.Errorf("--namespace %q: %s", namespace, bad[0])
			}
			_, c, _, err := hub.Clients()
			if err != nil {
				return err
			}
			ctx, out, errOut := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			if namespace == "" && !allNamespaces {
				sets := &clusterv1alpha1.ClusterSetList{}
				if err := c.List(ctx, sets); err != nil {
					return err
				}
				sets.Items = slices.DeleteFunc(sets.Items, func(s clusterv1alpha1.ClusterSet) bool { return len(args) > 0 && !slices.Contains(args, s.Name) })
				for i := range sets.Items {
					sets.Items[i].TypeMeta = metav1.TypeMeta{APIVersion: clusterv1alpha1.GroupVersion.String(), Kind: "ClusterSet"}
				}
				return output.print(out, errOut, asList(sets.Items), func() *metav1.Table { return clusterSetTable(sets.Items) })
			}
			if allNamespaces {
				namespace = ""
			}
			bindings := &clusterv1alpha1.ClusterSetBindingList{}
			if err := c.List(ctx, bindings, client.InNamespace(namespace)); err != nil {
				return err
			}
			bindings.Items = slices.DeleteFunc(bindings.Items, func(b clusterv1alpha1.ClusterSetBinding) bool {
				return len(args) > 0 && !slices.Contains(args, b.Spec.ClusterSet)
			})
			if output.table() && len(bindings.Items) == 0 && namespace != "" {
				fmt.Fprintf(errOut, "No ClusterSet is bound to namespace %s.\n", namespace)
				return nil
			}
			for i := range bindings.Items {
				bindings.Items[i].TypeMeta = metav1.TypeMeta{APIVersion: clusterv1alpha1.GroupVersion.String(), Kind: "ClusterSetBinding"}
			}
			return output.print(out, errOut, asList(bindings.Items), func() *metav1.Table { return clusterSetBindingTable(bindings.Items) })
		},
	}
	hub.AddFlags(cmd.Flags())
	output.addFlags(cmd.Flags())
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "list this namespace's bindings and the clusters they grant")
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "list the bindings of every namespace")
	return cmd
}

// clusterSetTable is the table of ClusterSets; wide adds the selector.
func clusterSetTable(sets []clusterv1alpha1.ClusterSet) *metav1.Table {
	t := newTable("Name", "Selector-Type", "Clusters", "Empty", "Age", "Selector+")
	for i := range sets {
		s := &sets[i]
		empty := "-"
		if c := meta.FindStatusCondition(s.Status.Conditions, clusterv1alpha1.ClusterSetConditionEmpty); c != nil {
			empty = string(c.Status)
		}
		addRow(t, s, s.Name, string(s.Spec.ClusterSelector.SelectorType), strconv.Itoa(int(s.Status.ClusterCount)), empty,
			age(s.CreationTimestamp.Time), selectorString(s))
	}
	return t
}

// clusterSetBindingTable is the table of ClusterSetBindings; wide adds the clusters each grants.
func clusterSetBindingTable(bindings []clusterv1alpha1.ClusterSetBinding) *metav1.Table {
	t := newTable("Namespace", "ClusterSet", "Bound", "Clusters", "Age", "Granted+")
	for i := range bindings {
		b := &bindings[i]
		bound := "-"
		if c := meta.FindStatusCondition(b.Status.Conditions, clusterv1alpha1.ClusterSetBindingConditionBound); c != nil {
			bound = string(c.Status)
			if c.Status != "True" {
				bound += " (" + c.Reason + ")"
			}
		}
		granted := strings.Join(b.Status.Clusters, ",")
		if n := int(b.Status.ClusterCount) - len(b.Status.Clusters); n > 0 {
			granted += fmt.Sprintf(" and %d more", n)
		}
		addRow(t, b, b.Namespace, b.Spec.ClusterSet, bound, strconv.Itoa(int(b.Status.ClusterCount)), age(b.CreationTimestamp.Time), orDash(granted))
	}
	return t
}
