package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
)

// getOptions are the flags of flotilla get.
type getOptions struct {
	hub            cmdutil.HubFlags
	output         listOutput
	namespace      string
	selector       string
	clusterList    string
	allNamespaces  bool
	watch          bool
	clusterTimeout time.Duration
}

func newGetCommand() *cobra.Command {
	o := &getOptions{}
	cmd := &cobra.Command{
		Use:   "get KIND [NAME...] | get KIND [NAME] --clusters a,b|all",
		Short: "List Flotilla's kinds on the hub, or any kind in the member clusters with --clusters",
		Long: `flotilla get KIND reads the hub for Flotilla's own kinds:
` + hubKinds + `.
KIND is a plural, a singular, a kind or a short name, resolved with the hub's discovery so that the short
names are the CRDs' own. clusters and bindings (rb and crb together) get Flotilla's tables, and -w prints
the table, then a row per change until interrupted; the other kinds are printed with their CRD's columns.

With --clusters, KIND is read in the member clusters through the hub's proxy instead, as the caller: the
clusters named (or all) at once, each within --cluster-timeout, printed as each member's API server prints
it with a CLUSTER column first; a cluster that fails gets an error line and does not fail the others.
Without --clusters, a kind that is not Flotilla's (pods, deployments …) is an error that says so.`,
		Example: `  flotilla get clusters -o wide
  flotilla get clusters --show-labels -w
  flotilla get clusters -o custom-columns=NAME:.metadata.name,REGION:.spec.region
  flotilla get bindings                  # every namespace, and the cluster-scoped bindings
  flotilla get rb -n shop -l app=web -o wide
  flotilla get pp -A                     # PropagationPolicies on the hub
  flotilla get pods -A --clusters all    # Pods in every member cluster
  flotilla get deploy web -n shop --clusters m1,m2 -o yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	o.hub.AddFlags(cmd.Flags())
	o.output.addFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.namespace, "namespace", "n", "", "bindings: only this namespace's (default: every namespace); other namespaced kinds: the namespace to read (default: the kubeconfig context's)")
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "every namespace (for bindings, the default, with the cluster-scoped ones)")
	cmd.Flags().StringVar(&o.clusterList, "clusters", "", "read KIND in these member clusters through the hub, comma-separated, or all (without it, flotilla get reads the hub's Flotilla kinds)")
	cmd.Flags().DurationVar(&o.clusterTimeout, "cluster-timeout", 10*time.Second, "for kinds read in the members: how long to wait for each cluster")
	cmd.Flags().StringVarP(&o.selector, "selector", "l", "", "label selector, for example app=web,tier!=cache")
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", false, "clusters and bindings: after the listing, print a row per change until interrupted")
	return cmd
}

func (o *getOptions) run(cmd *cobra.Command, args []string) error {
	if err := o.output.validate(); err != nil {
		return err
	}
	sel, err := labels.Parse(o.selector)
	if err != nil {
		return fmt.Errorf("--selector %q: %w", o.selector, err)
	}
	if bad := validation.IsDNS1123Label(o.namespace); o.namespace != "" && len(bad) > 0 {
		return fmt.Errorf("--namespace %q: %s", o.namespace, strings.Join(bad, "; "))
	}
	namespace := o.namespace
	if o.allNamespaces {
		namespace = "" // as kubectl: --all-namespaces wins over --namespace
	}
	if cmd.Flags().Changed("clusters") {
		if o.watch {
			return fmt.Errorf("--watch: flotilla get watches the hub's clusters and bindings, not kinds in the members")
		}
		return fleetGet(cmd, o.hub, args, fleetQuery{kind: args[0], namespace: namespace, allNamespaces: o.allNamespaces,
			selector: sel, output: o.output, timeout: o.clusterTimeout}, o.clusterList)
	}
	var resource string
	switch args[0] {
	case "clusters", "cluster":
		resource = "clusters"
	case "bindings", "binding":
		resource = "bindings" // not a kind of the API: both rb and crb
	case "rb", "crb":
		resource = args[0]
	}
	if resource == "crb" && namespace != "" {
		return fmt.Errorf("--namespace %q: cluster-scoped bindings (crb) are in no namespace", namespace)
	}
	cfg, c, kube, err := o.hub.Clients()
	if err != nil {
		return err
	}
	if resource == "" {
		var mapping *meta.RESTMapping
		if resource, mapping, err = hubResource(kube.Discovery(), args[0]); err != nil {
			return err
		}
		if mapping != nil {
			return o.hubGet(cmd, kube.Discovery(), mapping, args, fleetQuery{kind: args[0], namespace: namespace,
				allNamespaces: o.allNamespaces, selector: sel, output: o.output})
		}
		if resource == "crb" && namespace != "" {
			return fmt.Errorf("--namespace %q: cluster-scoped bindings (crb) are in no namespace", namespace)
		}
	}
	ctx, out, errOut := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	if o.watch {
		var stop context.CancelFunc
		ctx, stop = untilInterrupted(ctx)
		defer stop()
	}
	if resource == "clusters" {
		clusters, err := listClusters(ctx, c, args[1:], sel)
		if err != nil {
			return err
		}
		if err := o.output.print(out, errOut, clusters, func() *metav1.Table {
			return clusterTable(clusters.Items, lastRenewals(ctx, c, clusters.Items))
		}); err != nil || !o.watch {
			return err
		}
		wc, err := client.NewWithWatch(cfg, client.Options{Scheme: c.Scheme()})
		if err != nil {
			return err
		}
		w, err := wc.Watch(ctx, &clusterv1alpha1.ClusterList{}, watchOptions(clusters.ResourceVersion, sel, args[1:])...)
		if err != nil {
			return err
		}
		return follow(ctx, out, o.output.afterListing(len(clusters.Items)), c, []watch.Interface{w}, args[1:], func(obj client.Object) *metav1.Table {
			cl := obj.(*clusterv1alpha1.Cluster)
			items := []clusterv1alpha1.Cluster{*cl}
			return clusterTable(items, lastRenewals(ctx, c, items))
		})
	}
	q := bindingQuery{resource: resource, namespace: namespace, selector: sel, names: args[1:]}
	bindings, err := listBindings(ctx, c, q)
	if err != nil {
		return err
	}
	for _, name := range args[1:] {
		if !slices.ContainsFunc(bindings.items, func(b workv1alpha1.Binding) bool { return b.GetName() == name }) {
			return fmt.Errorf("binding %q not found", name)
		}
	}
	now := time.Now()
	if o.output.table() {
		err = o.output.print(out, errOut, nil, func() *metav1.Table { return bindingTable(bindings.items, now) })
	} else {
		err = printBindingObjects(out, o.output, c, len(args) != 2, bindings.items...)
	}
	if err != nil || !o.watch {
		return err
	}
	watches, err := watchBindings(ctx, cfg, c, q, bindings)
	if err != nil {
		return err
	}
	return follow(ctx, out, o.output.afterListing(len(bindings.items)), c, watches, args[1:], func(obj client.Object) *metav1.Table {
		return bindingTable([]workv1alpha1.Binding{obj.(workv1alpha1.Binding)}, time.Now())
	})
}

// untilInterrupted ends with ctx or on the first SIGINT or SIGTERM, which ends a watch without an error.
func untilInterrupted(ctx context.Context) (context.Context, context.CancelFunc) {
	signalled, stopSignals := cmdutil.SignalContext()
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-signalled.Done():
		case <-ctx.Done():
		}
		cancel()
	}()
	return ctx, func() { cancel(); stopSignals() }
}

// watchOptions watch from the listing's resourceVersion, so no change between the listing and the watch is
// lost; one name narrows the watch to it on the server, more names are filtered as the changes come.
func watchOptions(resourceVersion string, sel labels.Selector, names []string) []client.ListOption {
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: sel}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: resourceVersion}}}
	if len(names) == 1 {
		opts = append(opts, client.MatchingFields{"metadata.name": names[0]})
	}
	return opts
}

// afterListing are the output flags of the changes that follow a listing of n objects: without the header
// the listing printed.
func (o listOutput) afterListing(n int) listOutput {
	o.noHeaders = o.noHeaders || n > 0
	return o
}

// follow prints, until ctx ends, each change the watches report of the objects named (all when none), as
// kubectl get -w: a row of table through one table printer (so the header is not printed again), or the
// object in an object format. A watch that the hub ends, or an error event, ends it with an error.
func follow(ctx context.Context, out io.Writer, o listOutput, c client.Client, watches []watch.Interface, names []string, table func(client.Object) *metav1.Table) error {
	events := make(chan watch.Event)
	done := make(chan struct{})
	defer close(done)
	for _, w := range watches {
		defer w.Stop()
		go func() {
			for ev := range w.ResultChan() {
				select {
				case events <- ev:
				case <-done:
					return
				}
			}
			select {
			case events <- watch.Event{Type: watch.Error, Object: &metav1.Status{Message: "the hub ended the watch; run the command again"}}:
			case <-done:
			}
		}()
	}
	printer := o.tablePrinter()
	for {
		var ev watch.Event
		select {
		case <-ctx.Done():
			return nil
		case ev = <-events:
		}
		switch ev.Type {
		case watch.Bookmark:
			continue
		case watch.Error:
			return fmt.Errorf("watching: %w", apierrors.FromObject(ev.Object))
		}
		obj, ok := ev.Object.(client.Object)
		if !ok {
			return fmt.Errorf("watching: unexpected %T", ev.Object)
		}
		if len(names) > 0 && !slices.Contains(names, obj.GetName()) {
			continue
		}
		var err error
		if o.table() {
			err = printer.PrintObj(table(obj), out)
		} else {
			gvk, gerr := apiutil.GVKForObject(obj, c.Scheme())
			if gerr != nil {
				return gerr
			}
			obj.GetObjectKind().SetGroupVersionKind(gvk)
			err = o.printObjects(out, obj)
		}
		if err != nil {
			return err
		}
	}
}
