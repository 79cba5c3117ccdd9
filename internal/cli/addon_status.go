package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// newAddOnStatusCommand is flotilla addon status: how an add-on runs on each cluster it is enabled on.
func newAddOnStatusCommand() *cobra.Command {
	var target addOnTarget
	var output listOutput
	cmd := &cobra.Command{
		Use:   "status NAME [--cluster CLUSTER...]",
		Short: "Show how an add-on runs on each cluster: Available, Progressing, Degraded, RegistrationApplied, revision, configs and health mode",
		Example: `  flotilla addon status hello
  flotilla addon status hello --cluster m1 -o wide   # with its namespace, hub identity and what is wrong
  flotilla addon status hello -o yaml                # the ClusterAddOns`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := output.validate(); err != nil {
				return err
			}
			if err := target.validate(args[0], ""); err != nil {
				return err
			}
			_, c, _, err := target.hub.Clients()
			if err != nil {
				return err
			}
			ctx, out, errOut := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			a := &addonv1alpha1.AddOn{}
			if err := c.Get(ctx, client.ObjectKey{Name: args[0]}, a); apierrors.IsNotFound(err) {
				a = nil
			} else if err != nil {
				return err
			}
			items, err := clusterAddOns(ctx, c, args[0], target.clusters)
			if err != nil {
				return err
			}
			if a == nil && len(items) == 0 {
				return fmt.Errorf("AddOn %s does not exist (flotilla addon list shows the add-ons)", args[0])
			}
			if output.table() {
				printAddOnSummary(out, args[0], a)
				if len(items) == 0 {
					where := "any cluster"
					if len(target.clusters) > 0 {
						where = strings.Join(target.clusters, ", ")
					}
					fmt.Fprintf(out, "It is not enabled on %s.\n", where)
					return nil
				}
			}
			return output.print(out, errOut, asList(items), func() *metav1.Table { return addOnStatusTable(items) })
		},
	}
	target.addFlags(cmd, "show only this cluster")
	output.addFlags(cmd.Flags())
	return cmd
}

// printAddOnSummary prints the lines above the status table: the add-on's strategy, counts and rollouts.
func printAddOnSummary(out io.Writer, name string, a *addonv1alpha1.AddOn) {
	if a == nil {
		fmt.Fprintf(out, "AddOn %s does not exist: its ClusterAddOns below install nothing (they are Degraded until it does).\n", name)
		return
	}
	fmt.Fprintf(out, "AddOn %s: strategy %s", name, strategyOf(a))
	if p := placementsOf(a); p != "" {
		fmt.Fprintf(out, " (%s)", p)
	}
	fmt.Fprintf(out, ", health by %s, enabled on %d clusters, available on %d\n", healthModeOf(a.Spec.HealthCheck), a.Status.EnabledClusters, a.Status.AvailableClusters)
	for _, r := range a.Status.Rollouts {
		fmt.Fprintf(out, "Rollout of placement %s/%s: revision %d", r.Namespace, r.Name, r.Rollout.TargetRevision)
		if r.Rollout.StableRevision != r.Rollout.TargetRevision {
			fmt.Fprintf(out, " (stable %d), wave %d", r.Rollout.StableRevision, r.Rollout.Wave)
		}
		fmt.Fprintln(out)
	}
}

// addOnStatusTable is the status table, one row per cluster; wide adds the install namespace, how it was
// enabled, the agent's hub identity and what is wrong.
func addOnStatusTable(items []addonv1alpha1.ClusterAddOn) *metav1.Table {
	t := newTable("Cluster", "Available", "Progressing", "Degraded", "Registration", "Revision", "Health", "Configs",
		"Namespace+", "Enabled-By+", "Hub-User+", "Message+")
	for i := range items {
		ca := &items[i]
		s := &ca.Status
		var users []string
		for _, r := range s.Registrations {
			users = append(users, r.User)
		}
		addRow(t, ca, clusterOf(ca), addOnCondition(s.Conditions, addonv1alpha1.ConditionAvailable),
			addOnCondition(s.Conditions, addonv1alpha1.ConditionProgressing), addOnCondition(s.Conditions, addonv1alpha1.ConditionDegraded),
			addOnCondition(s.Conditions, addonv1alpha1.ConditionRegistrationApplied), orDash(s.Revision), string(healthModeOf(s.HealthCheck)),
			orDash(configsString(s.ConfigReferences)), orDash(s.Namespace), enabledBy(ca), orDash(strings.Join(users, ",")), orDash(addOnProblem(s.Conditions)))
	}
	return t
}

// configsString names the configuration objects a cluster runs with, with the start of each one's hash.
func configsString(configs []addonv1alpha1.ConfigStatus) string {
	parts := make([]string, 0, len(configs))
	for _, c := range configs {
		s := c.Resource + "/" + c.Namespace + "/" + c.Name
		if c.SpecHash != "" {
			s += "@" + c.SpecHash[:min(8, len(c.SpecHash))]
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ",")
}

// printClusterAddOns prints, for describe cluster, the add-ons enabled on a cluster and their health.
func printClusterAddOns(ctx context.Context, w io.Writer, c client.Client, cluster string) {
	list := &addonv1alpha1.ClusterAddOnList{}
	if err := c.List(ctx, list, client.InNamespace(clusterv1alpha1.ClusterNamespace(cluster))); err != nil {
		fmt.Fprintf(w, "Add-ons:\tunknown (%v)\n", err)
		return
	}
	if len(list.Items) == 0 {
		fmt.Fprintln(w, "Add-ons:\tnone")
		return
	}
	sortClusterAddOns(list.Items)
	fmt.Fprintln(w, "Add-ons:\n  NAME\tAVAILABLE\tDEGRADED\tREVISION\tMESSAGE")
	for i := range list.Items {
		ca := &list.Items[i]
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", ca.Name, addOnCondition(ca.Status.Conditions, addonv1alpha1.ConditionAvailable),
			addOnCondition(ca.Status.Conditions, addonv1alpha1.ConditionDegraded), orDash(ca.Status.Revision), orDash(addOnProblem(ca.Status.Conditions)))
	}
}
