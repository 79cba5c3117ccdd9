package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/scheduler"
)

func newExplainCommand() *cobra.Command {
	var hub cmdutil.HubFlags
	var cluster string
	cmd := &cobra.Command{
		Use:   "explain KIND/NAME",
		Short: "Say, for each cluster, whether a template is placed there (with its replicas) or why not",
		Long: `Explain prints, for each cluster, whether the template runs there and with how many replicas, or every
reason the scheduler gave for leaving the cluster out at its last pass: a filter (ClusterAffinity,
TaintToleration, APIEnablement, FailoverRecords), the spread constraints, the replica division or capacity.

It is not kubectl explain: kubectl's prints a kind's schema and works against the hub as against any API
server (kubectl explain propagationpolicy.spec.placement); flotilla explain explains a placement.`,
		Example: "  flotilla explain deployment/web -n shop\n  flotilla explain deployment/web -n shop --cluster member3",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			target, err := parseKindName(args[0])
			if err != nil {
				return err
			}
			namespace, err := hub.Namespace()
			if err != nil {
				return err
			}
			_, c, kube, err := hub.Clients()
			if err != nil {
				return err
			}
			b, err := templateBinding(cmd.Context(), c, kube, target, namespace)
			if err != nil {
				return err
			}
			names, err := clusterNames(cmd.Context(), c, b)
			if err != nil {
				return err
			}
			if cluster != "" {
				if !slices.Contains(names, cluster) {
					return fmt.Errorf("--cluster %s: no such cluster", cluster)
				}
				names = []string{cluster}
			}
			return printExplanation(cmd.OutOrStdout(), b, names)
		},
	}
	hub.AddFlags(cmd.Flags())
	hub.AddNamespaceFlag(cmd.Flags(), "namespace of the template")
	cmd.Flags().StringVar(&cluster, "cluster", "", "explain only this cluster")
	return cmd
}

// templateBinding reads the binding of a template named KIND/NAME.
func templateBinding(ctx context.Context, c client.Client, kube kubernetes.Interface, target kindName, namespace string) (workv1alpha1.Binding, error) {
	gvk, namespaced, err := templateKind(kube.Discovery(), target.kind)
	if err != nil {
		return nil, err
	}
	var b workv1alpha1.Binding = &workv1alpha1.ClusterResourceBinding{}
	key := client.ObjectKey{Name: workv1alpha1.BindingName(gvk.GroupKind(), target.name)}
	if namespaced {
		b, key.Namespace = &workv1alpha1.ResourceBinding{}, namespace
	}
	if err := c.Get(ctx, key, b); err != nil {
		return nil, fmt.Errorf("%s/%s is not placed by any policy: %w", target.kind, target.name, err)
	}
	return b, nil
}

// clusterNames are the fleet's clusters, sorted; a person who may not list Clusters gets those the binding
// names.
func clusterNames(ctx context.Context, c client.Client, b workv1alpha1.Binding) ([]string, error) {
	list := &clusterv1alpha1.ClusterList{}
	err := c.List(ctx, list)
	if err != nil && !apierrors.IsForbidden(err) {
		return nil, err
	}
	var names []string
	for _, cl := range list.Items {
		names = append(names, cl.Name)
	}
	if err != nil {
		for _, t := range b.BindingSpec().Clusters {
			names = append(names, t.Name)
		}
		for _, v := range b.BindingStatus().NotPlacedOn {
			names = append(names, v.Cluster)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

func printExplanation(out io.Writer, b workv1alpha1.Binding, names []string) error {
	spec := b.BindingSpec()
	fmt.Fprintf(out, "%s/%s", spec.Resource.Kind, spec.Resource.Name)
	if spec.Resource.Namespace != "" {
		fmt.Fprintf(out, " in %s", spec.Resource.Namespace)
	}
	fmt.Fprintf(out, " (binding %s)\n", b.GetName())
	if cond := findCondition(b.BindingStatus(), workv1alpha1.ConditionScheduled); cond != "" {
		fmt.Fprintf(out, "  %s\n", cond)
	}
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tPLACED\tREPLICAS\tWHY NOT")
	for _, e := range scheduler.Explain(b, names) {
		if e.Placed {
			fmt.Fprintf(w, "%s\tyes\t%d\t-\n", e.Cluster, e.Replicas)
			continue
		}
		fmt.Fprintf(w, "%s\tno\t-\t%s\n", e.Cluster, strings.Join(e.Why, "; "))
	}
	return w.Flush()
}

func findCondition(s *workv1alpha1.ResourceBindingStatus, t string) string {
	for _, c := range s.Conditions {
		if c.Type == t {
			return fmt.Sprintf("%s=%s  %s", c.Type, c.Status, c.Message)
		}
	}
	return ""
}
