package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/detector"
)

// printBindings prints bindings as a table: where each template runs and how it is doing.
func printBindings(out io.Writer, bindings []client.Object) error {
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE\tNAME\tRESOURCE\tSCHEDULED\tAPPLIED\tHEALTHY\tCLUSTERS")
	for _, o := range bindings {
		b := o.(workv1alpha1.Object)
		spec, status := b.BindingSpec(), b.BindingStatus()
		var clusters []string
		for _, c := range spec.Clusters {
			clusters = append(clusters, fmt.Sprintf("%s(%d)", c.Name, c.Replicas))
		}
		fmt.Fprintf(w, "%s\t%s\t%s/%s\t%s\t%s\t%s\t%s\n", orDash(o.GetNamespace()), o.GetName(), spec.Resource.Kind, spec.Resource.Name,
			conditionStatus(status, workv1alpha1.ConditionScheduled), conditionStatus(status, workv1alpha1.ConditionFullyApplied),
			conditionStatus(status, workv1alpha1.ConditionHealthy), orDash(strings.Join(clusters, ",")))
	}
	return w.Flush()
}

func conditionStatus(s *workv1alpha1.ResourceBindingStatus, t string) string {
	if c := meta.FindStatusCondition(s.Conditions, t); c != nil {
		return string(c.Status)
	}
	return "-"
}

func newStatusCommand() *cobra.Command {
	var hub hubFlags
	var namespace string
	cmd := &cobra.Command{
		Use:     "status KIND/NAME",
		Short:   "Show where a template runs and its state in each cluster",
		Example: "  flotilla status deployment/web -n shop",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			target, err := parseKindName(args[0])
			if err != nil {
				return err
			}
			_, c, kube, err := hub.clients()
			if err != nil {
				return err
			}
			gvk, namespaced, err := templateKind(kube.Discovery(), target.kind)
			if err != nil {
				return err
			}
			kind, name := target.kind, target.name
			var b client.Object = &workv1alpha1.ClusterResourceBinding{}
			key := client.ObjectKey{Name: detector.BindingName(gvk.GroupKind(), name)}
			if namespaced {
				b, key.Namespace = &workv1alpha1.ResourceBinding{}, namespace
			}
			if err := c.Get(cmd.Context(), key, b); err != nil {
				return fmt.Errorf("%s/%s is not placed by any policy: %w", kind, name, err)
			}
			spec, status := b.(workv1alpha1.Object).BindingSpec(), b.(workv1alpha1.Object).BindingStatus()
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s/%s", spec.Resource.Kind, spec.Resource.Name)
			if spec.Resource.Namespace != "" {
				fmt.Fprintf(out, " in %s", spec.Resource.Namespace)
			}
			fmt.Fprintf(out, " (binding %s)\n", b.GetName())
			for _, cond := range status.Conditions {
				fmt.Fprintf(out, "  %s=%s  %s\n", cond.Type, cond.Status, cond.Message)
			}
			works := &workv1alpha1.WorkList{}
			if err := c.List(cmd.Context(), works, client.MatchingLabels{workv1alpha1.LabelBindingName: b.GetName(),
				workv1alpha1.LabelBindingNamespace: b.GetNamespace()}); err != nil {
				return err
			}
			overrides := map[string]string{}
			for _, w := range works.Items {
				if cluster, ok := clusterv1alpha1.ClusterOfNamespace(w.Namespace); ok {
					overrides[cluster] = w.Annotations[workv1alpha1.AnnotationOverrides]
				}
			}
			w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
			fmt.Fprintln(w, "CLUSTER\tREPLICAS\tAPPLIED\tHEALTH\tOVERRIDES\tMESSAGE")
			for _, item := range status.AggregatedStatus {
				replicas := int32(0)
				for _, t := range spec.Clusters {
					if t.Name == item.ClusterName {
						replicas = t.Replicas
					}
				}
				fmt.Fprintf(w, "%s\t%d\t%v\t%s\t%s\t%s\n", item.ClusterName, replicas, item.Applied, orDash(string(item.Health)),
					orDash(overrides[item.ClusterName]), orDash(item.AppliedMessage))
			}
			return w.Flush()
		},
	}
	hub.addFlags(cmd.Flags())
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "default", "namespace of the template")
	return cmd
}
