package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
)

// kindName is a KIND/NAME argument, such as deployment/web.
type kindName struct{ kind, name string }

// parseKindName reads a KIND/NAME argument.
func parseKindName(arg string) (kindName, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok || kind == "" || name == "" || strings.Contains(name, "/") {
		return kindName{}, fmt.Errorf("%q: want KIND/NAME, for example deployment/web", arg)
	}
	if bad := path.IsValidPathSegmentName(name); len(bad) > 0 {
		return kindName{}, fmt.Errorf("%q: name %q: %s", arg, name, strings.Join(bad, "; "))
	}
	return kindName{kind: kind, name: name}, nil
}

// templateKind resolves a kind as kubectl does (deployment, deploy, deployments.apps) through the hub's
// discovery, and says whether its objects are namespaced.
func templateKind(d discovery.DiscoveryInterface, kind string) (schema.GroupVersionKind, bool, error) {
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(d)), d, nil)
	// As kubectl reads it: deployments.apps is a resource of a group, deployments.v1.apps of a version too.
	gvr, gr := schema.ParseResourceArg(kind)
	gvk, err := mapper.KindFor(gr.WithVersion(""))
	if gvr != nil {
		if versioned, verr := mapper.KindFor(*gvr); verr == nil {
			gvk, err = versioned, nil
		}
	}
	if err != nil {
		return schema.GroupVersionKind{}, false, fmt.Errorf("unknown kind %q: %w", kind, err)
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionKind{}, false, err
	}
	return gvk, mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// rebalanceOptions are the flags and arguments of flotilla rebalance.
type rebalanceOptions struct {
	hub       cmdutil.HubFlags
	namespace string
	output    string
	ttl       int32
	dryRun    cmdutil.DryRun
	targets   []kindName
}

func (o *rebalanceOptions) validate(args []string) error {
	switch o.output {
	case "", "yaml", "json":
	default:
		return fmt.Errorf("--output %q: want yaml or json", o.output)
	}
	if o.ttl < 0 {
		return fmt.Errorf("--ttl %d: must be 0 or more seconds", o.ttl)
	}
	for _, arg := range args {
		t, err := parseKindName(arg)
		if err != nil {
			return err
		}
		o.targets = append(o.targets, t)
	}
	return nil
}

func newRebalanceCommand() *cobra.Command {
	o := &rebalanceOptions{}
	cmd := &cobra.Command{
		Use:   "rebalance KIND/NAME...",
		Short: "Reschedule templates afresh, once, for example back to a recovered cluster",
		Long: "Creates a Rebalancer that asks the scheduler to place the named templates as if they ran nowhere yet:\n" +
			"clusterAffinities groups are tried from the first and divided replicas are shared out from scratch.\n" +
			"Prints the Rebalancer's name; `kubectl get rebalancer NAME -o yaml` shows each template's result.",
		Example: "  flotilla rebalance deployment/web -n shop\n  flotilla rebalance deploy/web deploy/api -n shop -o yaml\n" +
			"  flotilla rebalance deploy/web -n shop --dry-run=server -o yaml",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(args); err != nil {
				return err
			}
			namespace, err := o.hub.Namespace()
			if err != nil {
				return err
			}
			o.namespace = namespace
			_, c, kube, err := o.hub.Clients()
			if err != nil {
				return err
			}
			rb := &workv1alpha1.Rebalancer{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "rebalance-"},
				Spec:       workv1alpha1.RebalancerSpec{TTLSecondsAfterFinished: ptr.To(o.ttl)},
			}
			for _, t := range o.targets {
				gvk, namespaced, err := templateKind(kube.Discovery(), t.kind)
				if err != nil {
					return err
				}
				ref := workv1alpha1.WorkloadReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: t.name}
				if namespaced {
					ref.Namespace = o.namespace
				}
				rb.Spec.Workloads = append(rb.Spec.Workloads, ref)
			}
			if o.dryRun != cmdutil.DryRunClient {
				if err := c.Create(cmd.Context(), rb, &client.CreateOptions{DryRun: o.dryRun.Options()}); err != nil {
					return fmt.Errorf("creating the Rebalancer: %w", err)
				}
			}
			if o.output != "" {
				rb.APIVersion, rb.Kind = workv1alpha1.GroupVersion.String(), "Rebalancer"
				return printObject(cmd.OutOrStdout(), o.output, rb)
			}
			name := rb.Name
			if name == "" {
				name = rb.GenerateName + "(generated)"
			}
			fmt.Fprintln(cmd.OutOrStdout(), name+o.dryRun.Suffix())
			return nil
		},
	}
	o.hub.AddFlags(cmd.Flags())
	o.hub.AddNamespaceFlag(cmd.Flags(), "namespace of namespaced templates")
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "print the created Rebalancer as yaml or json instead of its name")
	cmdutil.AddDryRunFlag(cmd.Flags(), &o.dryRun, "the Rebalancer")
	cmd.Flags().Int32Var(&o.ttl, "ttl", 300, "seconds the Rebalancer stays after it finished, so its results can be read")
	return cmd
}
