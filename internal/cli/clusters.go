package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
)

// listClusters reads the clusters named (all when none) that sel matches with one LIST, narrowed to the name
// when there is one, so that the list's resourceVersion is where a watch goes on from. A name that is not
// there is an error.
func listClusters(ctx context.Context, c client.Client, names []string, sel labels.Selector) (*clusterv1alpha1.ClusterList, error) {
	list := &clusterv1alpha1.ClusterList{}
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: sel}}
	if len(names) == 1 {
		opts = append(opts, client.MatchingFields{"metadata.name": names[0]})
	}
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	if len(names) > 0 {
		all := &clusterv1alpha1.ClusterList{}
		if !sel.Empty() { // a name the selector leaves out is there, but not listed
			if err := c.List(ctx, all, opts[1:]...); err != nil {
				return nil, err
			}
		} else {
			all = list
		}
		for _, name := range names {
			if !slices.ContainsFunc(all.Items, func(cl clusterv1alpha1.Cluster) bool { return cl.Name == name }) {
				return nil, fmt.Errorf("cluster %q not found", name)
			}
		}
		list.Items = slices.DeleteFunc(list.Items, func(cl clusterv1alpha1.Cluster) bool { return !slices.Contains(names, cl.Name) })
	}
	list.APIVersion, list.Kind = clusterv1alpha1.GroupVersion.String(), "ClusterList"
	for i := range list.Items {
		list.Items[i].APIVersion, list.Items[i].Kind = clusterv1alpha1.GroupVersion.String(), "Cluster"
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list, nil
}

// clusterTable is the table of flotilla get clusters; seen are the clusters' last heartbeats, nil when they
// could not be read (LAST-SEEN is then <unknown>, never "never").
func clusterTable(clusters []clusterv1alpha1.Cluster, seen map[string]time.Time) *metav1.Table {
	t := newTable("Name", "Mode", "Ready", "Version", "Nodes", "CPU", "Memory", "Age", "Last-Seen",
		"Tunnel+", "Provider+", "Region+", "Zones+", "Taints+")
	for i := range clusters {
		cl := &clusters[i]
		ready := "Unknown"
		if cond := meta.FindStatusCondition(cl.Status.Conditions, clusterv1alpha1.ClusterConditionReady); cond != nil {
			ready = string(cond.Status)
		}
		nodes, cpu, memory := "-", "-", "-"
		if s := cl.Status.NodeSummary; s != nil {
			nodes = fmt.Sprintf("%d/%d", s.ReadyNum, s.TotalNum)
		}
		if r := cl.Status.ResourceSummary; r != nil {
			cpu = usage(r, corev1.ResourceCPU)
			memory = usage(r, corev1.ResourceMemory)
		}
		var taints []string
		for _, t := range cl.Spec.Taints {
			taints = append(taints, taintString(t))
		}
		addRow(t, cl, cl.Name, string(cl.Spec.SyncMode), ready, orDash(cl.Status.KubernetesVersion), nodes, cpu, memory,
			age(cl.CreationTimestamp.Time), lastSeen(seen, cl.Name),
			tunnelState(cl), orDash(cl.Spec.Provider), orDash(cl.Spec.Region), orDash(strings.Join(cl.Spec.Zones, ",")), orDash(strings.Join(taints, ",")))
	}
	return t
}

// lastSeen is how long ago a cluster renewed its Lease, from its last renewals (nil: they could not be read).
func lastSeen(seen map[string]time.Time, cluster string) string {
	if seen == nil {
		return "<unknown>"
	}
	if renewed, ok := seen[cluster]; ok {
		return age(renewed) + " ago"
	}
	return "never"
}

// lastRenewals reads the heartbeats of clusters with one LIST of Leases (narrowed to the name when there is
// one cluster); nil when they cannot be read, which the table shows as <unknown>.
func lastRenewals(ctx context.Context, c client.Reader, clusters []clusterv1alpha1.Cluster) map[string]time.Time {
	var opts []client.ListOption
	if len(clusters) == 1 {
		opts = append(opts, client.MatchingFields{"metadata.name": clusters[0].Name})
	}
	seen, err := clusterstatus.LastRenewals(ctx, c, opts...)
	if err != nil {
		return nil
	}
	return seen
}

// tunnelState is a Pull cluster's TunnelConnected status ("Unknown" before the hub wrote it) and "-" for a
// Push cluster, which the hub dials directly.
func tunnelState(cl *clusterv1alpha1.Cluster) string {
	if cl.Spec.SyncMode != clusterv1alpha1.Pull {
		return "-"
	}
	if cond := meta.FindStatusCondition(cl.Status.Conditions, clusterv1alpha1.ClusterConditionTunnelConnected); cond != nil {
		return string(cond.Status)
	}
	return "Unknown"
}

// usage prints allocated/allocatable of one resource, memory in Gi.
func usage(r *clusterv1alpha1.ResourceSummary, name corev1.ResourceName) string {
	allocated, allocatable := r.Allocated[name], r.Allocatable[name]
	if name == corev1.ResourceMemory {
		gi := func(q resource.Quantity) string { return fmt.Sprintf("%.1f", float64(q.Value())/(1<<30)) }
		return gi(allocated) + "/" + gi(allocatable) + "Gi"
	}
	return allocated.String() + "/" + allocatable.String()
}

func age(t time.Time) string { return duration.HumanDuration(time.Since(t)) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func taintString(t corev1.Taint) string {
	s := t.Key
	if t.Value != "" {
		s += "=" + t.Value
	}
	return s + ":" + string(t.Effect)
}

func labelsString(l map[string]string) string {
	parts := make([]string, 0, len(l))
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func newTaintCommand() *cobra.Command {
	var hub cmdutil.HubFlags
	var dryRun cmdutil.DryRun
	cmd := &cobra.Command{
		Use:   "taint cluster NAME KEY[=VALUE]:EFFECT | KEY:EFFECT-",
		Short: "Add or remove a taint on a cluster",
		Example: `  flotilla taint cluster m1 dedicated=gpu:NoSchedule
  flotilla taint cluster m1 dedicated:NoSchedule-
  flotilla taint cluster m1 maintenance:NoExecute --dry-run=server`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "cluster" && args[0] != "clusters" {
				return fmt.Errorf("unknown resource %q: flotilla taint knows cluster", args[0])
			}
			taint, remove, err := parseTaint(args[2])
			if err != nil {
				return err
			}
			_, c, _, err := hub.Clients()
			if err != nil {
				return err
			}
			cl := &clusterv1alpha1.Cluster{}
			// The hub's health monitor updates Clusters too; a conflict is read again and retried.
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := c.Get(cmd.Context(), client.ObjectKey{Name: args[1]}, cl); err != nil {
					return err
				}
				var kept []corev1.Taint
				for _, t := range cl.Spec.Taints {
					if t.Key != taint.Key || t.Effect != taint.Effect {
						kept = append(kept, t)
					}
				}
				if remove && len(kept) == len(cl.Spec.Taints) {
					return fmt.Errorf("cluster %s has no taint %s:%s", cl.Name, taint.Key, taint.Effect)
				}
				if !remove {
					taint.TimeAdded = &metav1.Time{Time: time.Now()}
					kept = append(kept, taint)
				}
				cl.Spec.Taints = kept
				if dryRun == cmdutil.DryRunClient {
					return nil
				}
				return c.Update(cmd.Context(), cl, &client.UpdateOptions{DryRun: dryRun.Options()})
			})
			if err != nil {
				return err
			}
			verb := "tainted"
			if remove {
				verb = "untainted"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster %s %s%s\n", cl.Name, verb, dryRun.Suffix())
			return nil
		},
	}
	hub.AddFlags(cmd.Flags())
	cmdutil.AddDryRunFlag(cmd.Flags(), &dryRun, "the result")
	return cmd
}

// parseTaint reads KEY[=VALUE]:EFFECT, or KEY[:EFFECT]- for a removal.
func parseTaint(s string) (corev1.Taint, bool, error) {
	remove := strings.HasSuffix(s, "-")
	s = strings.TrimSuffix(s, "-")
	spec, effect, ok := strings.Cut(s, ":")
	if !ok {
		return corev1.Taint{}, false, fmt.Errorf("taint %q: want KEY[=VALUE]:EFFECT", s)
	}
	key, value, _ := strings.Cut(spec, "=")
	t := corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)}
	switch t.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return t, false, fmt.Errorf("taint %q: effect must be NoSchedule, PreferNoSchedule or NoExecute", s)
	}
	if key == "" {
		return t, false, errors.New("taint: the key is empty")
	}
	return t, remove, nil
}
