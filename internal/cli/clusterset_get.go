package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

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
	var output, namespace string
	var allNamespaces bool
	cmd := &cobra.Command{
		Use:   "get [NAME...] [-n NAMESPACE | -A]",
		Short: "List ClusterSets with their clusters, or a namespace's bindings and the clusters they grant",
		Example: `  flotilla clusterset get -o wide
  flotilla clusterset get -n team-a -o wide    # where team-a may place
  flotilla clusterset get -A`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validateOutput(output); err != nil {
				return err
			}
			if bad := validation.IsDNS1123Label(namespace); namespace != "" && len(bad) > 0 {
				return fmt.Errorf("--namespace %q: %s", namespace, bad[0])
			}
			_, c, _, err := hub.Clients()
			if err != nil {
				return err
			}
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			if namespace == "" && !allNamespaces {
				sets := &clusterv1alpha1.ClusterSetList{}
				if err := c.List(ctx, sets); err != nil {
					return err
				}
				sets.Items = slices.DeleteFunc(sets.Items, func(s clusterv1alpha1.ClusterSet) bool { return len(args) > 0 && !slices.Contains(args, s.Name) })
				if !tableOutput(output) {
					for i := range sets.Items {
						sets.Items[i].TypeMeta = metav1.TypeMeta{APIVersion: clusterv1alpha1.GroupVersion.String(), Kind: "ClusterSet"}
					}
					return printObject(out, output, map[string]any{"apiVersion": "v1", "kind": "List", "items": sets.Items})
				}
				return printClusterSets(out, sets.Items, output == "wide")
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
			if !tableOutput(output) {
				for i := range bindings.Items {
					bindings.Items[i].TypeMeta = metav1.TypeMeta{APIVersion: clusterv1alpha1.GroupVersion.String(), Kind: "ClusterSetBinding"}
				}
				return printObject(out, output, map[string]any{"apiVersion": "v1", "kind": "List", "items": bindings.Items})
			}
			if len(bindings.Items) == 0 && namespace != "" {
				fmt.Fprintf(out, "No ClusterSet is bound to namespace %s.\n", namespace)
				return nil
			}
			return printClusterSetBindings(out, bindings.Items, output == "wide")
		},
	}
	hub.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: "+outputFormats)
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "list this namespace's bindings and the clusters they grant")
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "list the bindings of every namespace")
	return cmd
}

// printClusterSets prints sets as a table; wide adds the selector.
func printClusterSets(out io.Writer, sets []clusterv1alpha1.ClusterSet, wide bool) error {
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	header := "NAME\tSELECTOR-TYPE\tCLUSTERS\tEMPTY\tAGE"
	if wide {
		header += "\tSELECTOR"
	}
	fmt.Fprintln(w, header)
	for i := range sets {
		s := &sets[i]
		empty := "-"
		if c := meta.FindStatusCondition(s.Status.Conditions, clusterv1alpha1.ClusterSetConditionEmpty); c != nil {
			empty = string(c.Status)
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s", s.Name, s.Spec.ClusterSelector.SelectorType, s.Status.ClusterCount, empty, age(s.CreationTimestamp.Time))
		if wide {
			fmt.Fprintf(w, "\t%s", selectorString(s))
		}
		fmt.Fprintln(w)
	}
	return w.Flush()
}

// printClusterSetBindings prints bindings as a table; wide adds the clusters each grants.
func printClusterSetBindings(out io.Writer, bindings []clusterv1alpha1.ClusterSetBinding, wide bool) error {
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	header := "NAMESPACE\tCLUSTERSET\tBOUND\tCLUSTERS\tAGE"
	if wide {
		header += "\tGRANTED"
	}
	fmt.Fprintln(w, header)
	for i := range bindings {
		b := &bindings[i]
		bound := "-"
		if c := meta.FindStatusCondition(b.Status.Conditions, clusterv1alpha1.ClusterSetBindingConditionBound); c != nil {
			bound = string(c.Status)
			if c.Status != "True" {
				bound += " (" + c.Reason + ")"
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s", b.Namespace, b.Spec.ClusterSet, bound, b.Status.ClusterCount, age(b.CreationTimestamp.Time))
		if wide {
			granted := strings.Join(b.Status.Clusters, ",")
			if n := int(b.Status.ClusterCount) - len(b.Status.Clusters); n > 0 {
				granted += fmt.Sprintf(" and %d more", n)
			}
			fmt.Fprintf(w, "\t%s", orDash(granted))
		}
		fmt.Fprintln(w)
	}
	return w.Flush()
}
