package cli

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/registration"
)

func newDescribeCommand() *cobra.Command {
	var hub cmdutil.HubFlags
	cmd := &cobra.Command{
		Use:   "describe cluster NAME",
		Short: "Show a cluster's conditions, taints, failover, workloads waiting to move, capacity, APIs, add-ons and recent events",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "cluster" && args[0] != "clusters" {
				return fmt.Errorf("unknown resource %q: flotilla describe knows cluster", args[0])
			}
			_, c, kube, err := hub.Clients()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			cl := &clusterv1alpha1.Cluster{}
			if err := c.Get(ctx, client.ObjectKey{Name: args[1]}, cl); err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 8, 2, ' ', 0)
			fmt.Fprintf(w, "Name:\t%s\nMode:\t%s\nEndpoint:\t%s\nID:\t%s\nLabels:\t%s\n", cl.Name, cl.Spec.SyncMode,
				orDash(cl.Spec.APIEndpoint), orDash(cl.Spec.ID), orDash(labelsString(cl.Labels)))
			fmt.Fprintf(w, "Cluster sets:\t%s\n", clusterSetsOf(ctx, c, cl))
			fmt.Fprintf(w, "Location:\tprovider=%s region=%s zones=%s\n", orDash(cl.Spec.Provider), orDash(cl.Spec.Region), orDash(strings.Join(cl.Spec.Zones, ",")))
			if cl.Spec.SyncMode == clusterv1alpha1.Pull {
				fmt.Fprintf(w, "Agent user:\t%s\n", registration.CurrentAgentUser(cl))
				fmt.Fprintf(w, "Agent certificate:\t%s\n", certificateExpiry(cl, time.Now()))
			}
			if dropped := cl.Annotations[clusterv1alpha1.AnnotationJoinDropped]; dropped != "" {
				fmt.Fprintf(w, "Dropped at join:\t%s (asked for by the join, not allowed by its token)\n", dropped)
			}
			fmt.Fprintf(w, "Version:\t%s (%s), agent %s\n", orDash(cl.Status.KubernetesVersion), orDash(cl.Status.Platform), orDash(cl.Status.AgentVersion))
			fmt.Fprintf(w, "Last seen:\t%s\n", lastSeen(lastRenewals(ctx, c, []clusterv1alpha1.Cluster{*cl}), cl.Name))
			if h := cl.Status.Health; h != nil {
				fmt.Fprintf(w, "Health:\tlivez=%s readyz=%s\n", h.Livez, h.Readyz)
			}
			now := time.Now()
			printTaints(w, cl.Spec.Taints, now)
			fmt.Fprintln(w, "Conditions:\n  TYPE\tSTATUS\tREASON\tSINCE\tMESSAGE")
			for _, cond := range cl.Status.Conditions {
				fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", cond.Type, cond.Status, cond.Reason, age(cond.LastTransitionTime.Time), cond.Message)
			}
			bindings, err := listBindings(ctx, c, bindingQuery{selector: labels.Everything()})
			if err != nil {
				return err
			}
			printFailover(w, cl, bindings.items, now)
			if n := cl.Status.NodeSummary; n != nil {
				fmt.Fprintf(w, "Nodes:\t%d ready of %d\n", n.ReadyNum, n.TotalNum)
			}
			if r := cl.Status.ResourceSummary; r != nil {
				fmt.Fprintln(w, "Capacity:\n  RESOURCE\tALLOCATABLE\tALLOCATED\tALLOCATING")
				for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
					a, b, p := r.Allocatable[name], r.Allocated[name], r.Allocating[name]
					fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", name, a.String(), b.String(), p.String())
				}
			}
			groups := make([]string, 0, len(cl.Status.APIEnablements))
			for _, e := range cl.Status.APIEnablements {
				groups = append(groups, e.GroupVersion)
			}
			fmt.Fprintf(w, "APIs:\t%d group versions: %s\n", len(groups), strings.Join(groups, ", "))
			printClusterAddOns(ctx, w, c, cl.Name)
			events, err := kube.EventsV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "regarding.kind=Cluster,regarding.name=" + cl.Name})
			if err != nil {
				return err
			}
			sort.Slice(events.Items, func(i, j int) bool { return events.Items[i].EventTime.Before(&events.Items[j].EventTime) })
			fmt.Fprintln(w, "Events:\n  TYPE\tREASON\tAGE\tFROM\tMESSAGE")
			for _, e := range events.Items {
				fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", e.Type, e.Reason, age(e.EventTime.Time), eventSource(e.Namespace), e.Note)
			}
			return w.Flush()
		},
	}
	hub.AddFlags(cmd.Flags())
	// Kept so that scripts passing it still run: the hub publishes when each binding moves (its
	// status.taintedClusters), with the default toleration it applies.
	cmd.Flags().Duration("default-failover-toleration", 0, "unused: the hub publishes when workloads move")
	_ = cmd.Flags().MarkDeprecated("default-failover-toleration", "the hub publishes when workloads move, with its own default toleration")
	return cmd
}

// eventSource says who wrote an event about a cluster, from the namespace it is in, the one thing about an
// event its writer cannot choose freely: the hub records events about (cluster-scoped) Clusters in default
// and its own flotilla-system; an agent may write events only in its cluster's namespace, and whatever it
// puts in them must not read as the hub's word.
func eventSource(namespace string) string {
	if cluster, ok := clusterv1alpha1.ClusterOfNamespace(namespace); ok {
		return "agent of " + cluster
	}
	if namespace == metav1.NamespaceDefault || namespace == clusterv1alpha1.SystemNamespace {
		return "hub"
	}
	return "namespace " + namespace
}

// certificateExpiry says when a Pull cluster's agent certificate expires, and what to do once it has.
func certificateExpiry(cl *clusterv1alpha1.Cluster, now time.Time) string {
	expires, err := time.Parse(time.RFC3339, cl.Annotations[clusterv1alpha1.AnnotationAgentCertificateExpires])
	switch {
	case err != nil:
		return "- (not recorded: signed before the hub recorded expiries)"
	case !now.Before(expires):
		return fmt.Sprintf("EXPIRED at %s: run flotilla join again on the agent's data directory with a new token, then flotilla accept %s",
			expires.Format(time.RFC3339), cl.Name)
	}
	return fmt.Sprintf("expires %s (in %s); the agent renews it before then", expires.Format(time.RFC3339), expires.Sub(now).Round(time.Minute))
}
