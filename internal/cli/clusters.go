package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
)

func newGetCommand() *cobra.Command {
	var hub cmdutil.HubFlags
	var output, namespace, selector, clusterList string
	var allNamespaces, noHeaders bool
	var clusterTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "get clusters|bindings|rb|crb [NAME...] | get KIND [NAME] [--clusters a,b|all]",
		Short: "List member clusters, bindings, or any kind in the member clusters through the hub",
		Long: `flotilla get clusters|bindings|rb|crb lists the hub's clusters and bindings. Any other kind is read in the
member clusters through the hub's proxy, as the caller: all clusters at once, each within --cluster-timeout,
printed as each member's API server prints it with a CLUSTER column first; a cluster that fails gets an error
line and does not fail the others.`,
		Example: `  flotilla get clusters -o wide
  flotilla get bindings                  # every namespace, and the cluster-scoped bindings
  flotilla get rb -n shop -l app=web -o wide
  flotilla get pods -A --clusters all
  flotilla get deploy web -n shop --clusters m1,m2 -o yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := validateOutput(output); err != nil {
				return err
			}
			sel, err := labels.Parse(selector)
			if err != nil {
				return fmt.Errorf("--selector %q: %w", selector, err)
			}
			if bad := validation.IsDNS1123Label(namespace); namespace != "" && len(bad) > 0 {
				return fmt.Errorf("--namespace %q: %s", namespace, strings.Join(bad, "; "))
			}
			if allNamespaces {
				namespace = "" // as kubectl: --all-namespaces wins over --namespace
			}
			var resource string
			switch args[0] {
			case "clusters", "cluster", "fc":
				resource = "clusters"
			case "bindings", "binding":
				resource = "bindings"
			case "rb", "crb":
				resource = args[0]
			default:
				return fleetGet(cmd, hub, args, fleetQuery{kind: args[0], namespace: namespace, allNamespaces: allNamespaces,
					selector: sel, output: output, noHeaders: noHeaders, timeout: clusterTimeout}, clusterList)
			}
			if resource == "crb" && namespace != "" {
				return fmt.Errorf("--namespace %q: cluster-scoped bindings (crb) are in no namespace", namespace)
			}
			_, c, _, err := hub.Clients()
			if err != nil {
				return err
			}
			table := printers.PrintOptions{Wide: output == "wide", NoHeaders: noHeaders}
			if resource == "clusters" {
				clusters, err := listClusters(cmd.Context(), c, args[1:], sel)
				if err != nil {
					return err
				}
				if !tableOutput(output) {
					return printObject(cmd.OutOrStdout(), output, clusters)
				}
				return printClusters(cmd.Context(), cmd.OutOrStdout(), c, clusters.Items, table)
			}
			bindings, err := listBindings(cmd.Context(), c, bindingQuery{resource: resource, namespace: namespace, selector: sel, names: args[1:]})
			if err != nil {
				return err
			}
			for _, name := range args[1:] {
				if !slices.ContainsFunc(bindings, func(b workv1alpha1.Binding) bool { return b.GetName() == name }) {
					return fmt.Errorf("binding %q not found", name)
				}
			}
			if !tableOutput(output) {
				return printBindingObjects(cmd.OutOrStdout(), output, c, len(args) != 2, bindings...)
			}
			return printBindings(cmd.OutOrStdout(), bindings, table, time.Now())
		},
	}
	hub.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: "+outputFormats)
	cmd.Flags().BoolVar(&noHeaders, "no-headers", false, "print tables without their header line")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "only the bindings of this namespace (default: every namespace); for other kinds, the namespace in the members (default: default)")
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "the bindings of every namespace, and the cluster-scoped ones (the default); for other kinds, every namespace of the members")
	cmd.Flags().StringVar(&clusterList, "clusters", "all", "for kinds read in the members: the clusters to read, comma-separated, or all")
	cmd.Flags().DurationVar(&clusterTimeout, "cluster-timeout", 10*time.Second, "for kinds read in the members: how long to wait for each cluster")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "label selector, for example app=web,tier!=cache")
	return cmd
}

func listClusters(ctx context.Context, c client.Client, names []string, sel labels.Selector) (*clusterv1alpha1.ClusterList, error) {
	list := &clusterv1alpha1.ClusterList{}
	if len(names) == 0 {
		if err := c.List(ctx, list, client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return nil, err
		}
	}
	for _, name := range names {
		cluster := &clusterv1alpha1.Cluster{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, cluster); err != nil {
			return nil, err
		}
		if sel.Matches(labels.Set(cluster.Labels)) {
			list.Items = append(list.Items, *cluster)
		}
	}
	list.APIVersion, list.Kind = clusterv1alpha1.GroupVersion.String(), "ClusterList"
	for i := range list.Items {
		list.Items[i].APIVersion, list.Items[i].Kind = clusterv1alpha1.GroupVersion.String(), "Cluster"
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list, nil
}

func printClusters(ctx context.Context, out io.Writer, c client.Client, clusters []clusterv1alpha1.Cluster, table printers.PrintOptions) error {
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	wide := table.Wide
	header := "NAME\tMODE\tREADY\tVERSION\tNODES\tCPU\tMEMORY\tAGE\tLAST-SEEN"
	if wide {
		header += "\tTUNNEL\tPROVIDER\tREGION\tZONES\tTAINTS"
	}
	if !table.NoHeaders {
		fmt.Fprintln(w, header)
	}
	for _, cl := range clusters {
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
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", cl.Name, cl.Spec.SyncMode, ready, orDash(cl.Status.KubernetesVersion),
			nodes, cpu, memory, age(cl.CreationTimestamp.Time), lastSeen(ctx, c, cl.Name))
		if wide {
			var taints []string
			for _, t := range cl.Spec.Taints {
				taints = append(taints, taintString(t))
			}
			fmt.Fprintf(w, "\t%s\t%s\t%s\t%s\t%s", tunnelState(&cl), orDash(cl.Spec.Provider), orDash(cl.Spec.Region),
				orDash(strings.Join(cl.Spec.Zones, ",")), orDash(strings.Join(taints, ",")))
		}
		fmt.Fprintln(w)
	}
	return w.Flush()
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

// lastSeen is how long ago the cluster's Lease was renewed.
func lastSeen(ctx context.Context, c client.Client, cluster string) string {
	lease := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: cluster}, lease); err != nil || lease.Spec.RenewTime == nil {
		return "never"
	}
	return age(lease.Spec.RenewTime.Time) + " ago"
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
	cmd := &cobra.Command{
		Use:   "taint cluster NAME KEY[=VALUE]:EFFECT | KEY:EFFECT-",
		Short: "Add or remove a taint on a cluster",
		Example: `  flotilla taint cluster m1 dedicated=gpu:NoSchedule
  flotilla taint cluster m1 dedicated:NoSchedule-`,
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
				return c.Update(cmd.Context(), cl)
			})
			if err != nil {
				return err
			}
			verb := "tainted"
			if remove {
				verb = "untainted"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster %s %s\n", cl.Name, verb)
			return nil
		},
	}
	hub.AddFlags(cmd.Flags())
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
