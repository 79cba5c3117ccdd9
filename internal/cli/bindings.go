package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
)

// bindingTable is the table of flotilla get bindings: where each template runs, how it is doing, and which
// clusters it is leaving; wide adds what each of those evictions waits for.
func bindingTable(bindings []workv1alpha1.Binding, now time.Time) *metav1.Table {
	t := newTable("Namespace", "Name", "Resource", "Scheduled", "Applied", "Healthy", "Clusters", "Evicting", "Waiting-For+")
	for _, b := range bindings {
		spec, status := b.BindingSpec(), b.BindingStatus()
		var clusters []string
		for _, c := range spec.Clusters {
			clusters = append(clusters, fmt.Sprintf("%s(%d)", c.Name, c.Replicas))
		}
		addRow(t, b, orDash(b.GetNamespace()), b.GetName(), spec.Resource.Kind+"/"+spec.Resource.Name,
			conditionStatus(status, workv1alpha1.ConditionScheduled), conditionStatus(status, workv1alpha1.ConditionFullyApplied),
			conditionStatus(status, workv1alpha1.ConditionHealthy), orDash(strings.Join(clusters, ",")), evictingColumn(spec.GracefulEvictionTasks, now),
			waitingForColumn(b, now))
	}
	return t
}

// bindingQuery is what flotilla get bindings lists, as kubectl get would: the kinds (rb, crb or both), one
// namespace or every one, a label selector and names.
type bindingQuery struct {
	resource  string
	namespace string // empty: every namespace, and the cluster-scoped bindings
	selector  labels.Selector
	names     []string
}

// bindingList is what listBindings read, with the resourceVersions of its lists for a watch from there.
type bindingList struct {
	items                 []workv1alpha1.Binding
	rbVersion, crbVersion string
}

// listBindings lists the bindings of q, the cluster-scoped ones first. A namespace leaves out the
// cluster-scoped bindings, which are in none.
func listBindings(ctx context.Context, c client.Client, q bindingQuery) (bindingList, error) {
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: q.selector}}
	var all bindingList
	if q.withCRB() {
		crbs := &workv1alpha1.ClusterResourceBindingList{}
		if err := c.List(ctx, crbs, opts...); err != nil {
			return all, err
		}
		for i := range crbs.Items {
			all.items = append(all.items, &crbs.Items[i])
		}
		all.crbVersion = crbs.ResourceVersion
	}
	if q.withRB() {
		rbs := &workv1alpha1.ResourceBindingList{}
		if err := c.List(ctx, rbs, append(opts, client.InNamespace(q.namespace))...); err != nil {
			return all, err
		}
		for i := range rbs.Items {
			all.items = append(all.items, &rbs.Items[i])
		}
		all.rbVersion = rbs.ResourceVersion
	}
	if len(q.names) > 0 {
		all.items = slices.DeleteFunc(all.items, func(b workv1alpha1.Binding) bool { return !slices.Contains(q.names, b.GetName()) })
	}
	return all, nil
}

func (q bindingQuery) withCRB() bool { return q.resource != "rb" && q.namespace == "" }
func (q bindingQuery) withRB() bool  { return q.resource != "crb" }

// watchBindings watches the bindings of q from where listed left off.
func watchBindings(ctx context.Context, cfg *rest.Config, c client.Client, q bindingQuery, listed bindingList) ([]watch.Interface, error) {
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: c.Scheme()})
	if err != nil {
		return nil, err
	}
	var watches []watch.Interface
	add := func(list client.ObjectList, version string, opts ...client.ListOption) error {
		w, err := wc.Watch(ctx, list, append(watchOptions(version, q.selector, q.names), opts...)...)
		if err != nil {
			for _, w := range watches {
				w.Stop()
			}
			return err
		}
		watches = append(watches, w)
		return nil
	}
	if q.withCRB() {
		if err := add(&workv1alpha1.ClusterResourceBindingList{}, listed.crbVersion); err != nil {
			return nil, err
		}
	}
	if q.withRB() {
		if err := add(&workv1alpha1.ResourceBindingList{}, listed.rbVersion, client.InNamespace(q.namespace)); err != nil {
			return nil, err
		}
	}
	return watches, nil
}

// printBindingObjects prints bindings as yaml or json with their apiVersion and kind, which a typed read
// leaves empty: as a List, or (one binding asked for by name) as the object.
func printBindingObjects(out io.Writer, o listOutput, c client.Client, list bool, bindings ...workv1alpha1.Binding) error {
	items := make([]any, 0, len(bindings))
	for _, b := range bindings {
		gvk, err := apiutil.GVKForObject(b, c.Scheme())
		if err != nil {
			return err
		}
		b.GetObjectKind().SetGroupVersionKind(gvk)
		items = append(items, b)
	}
	if !list && len(items) == 1 {
		return o.printObjects(out, items[0])
	}
	return o.printObjects(out, asList(items))
}

func conditionStatus(s *workv1alpha1.ResourceBindingStatus, t string) string {
	if c := meta.FindStatusCondition(s.Conditions, t); c != nil {
		return string(c.Status)
	}
	return "-"
}

func newStatusCommand() *cobra.Command {
	var hub cmdutil.HubFlags
	var output string
	cmd := &cobra.Command{
		Use:     "status KIND/NAME",
		Short:   "Show where a template runs, its state in each cluster, and the clusters it is leaving",
		Example: "  flotilla status deployment/web -n shop\n  flotilla status serviceexport/web -n shop   # providers, consumers, endpoints",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch output {
			case "", "yaml", "json":
			default:
				return fmt.Errorf("--output %q: want yaml or json", output)
			}
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
			if output == "" {
				gvk, _, err := templateKind(kube.Discovery(), target.kind)
				if err != nil {
					return err
				}
				if gvk.GroupKind() == mcsv1alpha1.SchemeGroupVersion.WithKind("ServiceExport").GroupKind() {
					return printServiceExportStatus(cmd.Context(), cmd.OutOrStdout(), c, client.ObjectKey{Namespace: namespace, Name: target.name})
				}
			}
			b, err := templateBinding(cmd.Context(), c, kube, target, namespace)
			if err != nil {
				return err
			}
			if output != "" {
				return printBindingObjects(cmd.OutOrStdout(), listOutput{format: output}, c, false, b)
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
			return printStatus(cmd.OutOrStdout(), b, overrides, time.Now())
		},
	}
	hub.AddFlags(cmd.Flags())
	hub.AddNamespaceFlag(cmd.Flags(), "namespace of the template")
	cmd.Flags().StringVarP(&output, "output", "o", "", "print the binding as yaml or json")
	return cmd
}

// printStatus prints a binding for flotilla status: its conditions, its state in each cluster (with the
// override policies of each cluster's copy), and the clusters it is leaving.
func printStatus(out io.Writer, b workv1alpha1.Binding, overrides map[string]string, now time.Time) error {
	spec, status := b.BindingSpec(), b.BindingStatus()
	fmt.Fprintf(out, "%s/%s", spec.Resource.Kind, spec.Resource.Name)
	if spec.Resource.Namespace != "" {
		fmt.Fprintf(out, " in %s", spec.Resource.Namespace)
	}
	fmt.Fprintf(out, " (binding %s)\n", b.GetName())
	for _, cond := range status.Conditions {
		fmt.Fprintf(out, "  %s=%s  %s\n", cond.Type, cond.Status, cond.Message)
	}
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tREPLICAS\tAPPLIED\tHEALTH\tOVERRIDES\tMESSAGE")
	for _, item := range status.AggregatedStatus {
		replicas := "0"
		if i := slices.IndexFunc(spec.Clusters, func(t workv1alpha1.TargetCluster) bool { return t.Name == item.ClusterName }); i >= 0 {
			replicas = strconv.Itoa(int(spec.Clusters[i].Replicas))
		} else if i := slices.IndexFunc(spec.GracefulEvictionTasks, func(t workv1alpha1.GracefulEvictionTask) bool {
			return t.FromCluster == item.ClusterName
		}); i >= 0 && spec.GracefulEvictionTasks[i].Replicas != nil {
			replicas = strconv.Itoa(int(*spec.GracefulEvictionTasks[i].Replicas)) + " (leaving)"
		}
		message := item.AppliedMessage
		if u := item.Unschedulable; u != nil && message == "" {
			message = fmt.Sprintf("%d unschedulable for %s", u.Replicas, now.Sub(u.Since.Time).Round(time.Second))
		}
		fmt.Fprintf(w, "%s\t%s\t%v\t%s\t%s\t%s\n", item.ClusterName, replicas, item.Applied, orDash(string(item.Health)),
			orDash(overrides[item.ClusterName]), orDash(message))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return printEvictions(out, b, now)
}
