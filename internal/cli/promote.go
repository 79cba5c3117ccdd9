package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/binding"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/selection"
)

// promoteOptions are the flags and arguments of flotilla promote.
type promoteOptions struct {
	hub          cmdutil.HubFlags
	cluster      string
	policy       string
	dependencies bool
	dryRun       cmdutil.DryRun
	targets      []kindName
}

func (o *promoteOptions) validate(args []string) error {
	if o.cluster == "" {
		return errors.New("--cluster is required: the member the objects run in")
	}
	if err := registration.ValidateClusterName(o.cluster); err != nil {
		return fmt.Errorf("--cluster %q: %w", o.cluster, err)
	}
	if o.policy != "" {
		if bad := validation.IsDNS1123Subdomain(o.policy); len(bad) > 0 {
			return fmt.Errorf("--policy %q: %s", o.policy, strings.Join(bad, "; "))
		}
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

func newPromoteCommand() *cobra.Command {
	o := &promoteOptions{}
	cmd := &cobra.Command{
		Use:   "promote KIND/NAME... --cluster CLUSTER",
		Short: "Bring objects running in a member under the hub, without restarting them",
		Long: `Reads the named objects from CLUSTER (through the hub's proxy, as you), removes what the member's
API server set (status, UIDs, managedFields, allocated addresses), and creates them on the hub as templates,
with a PropagationPolicy (ClusterPropagationPolicy for cluster-scoped objects) named promote-KIND-NAME that
places exactly these objects on CLUSTER and takes over the member's copies (conflictResolution: Overwrite, for
these objects alone). The member's objects stay as they are: the same spec is applied over them, so a
Deployment's pods keep running (same pod UIDs).

With --dependencies, the ConfigMaps, Secrets and ServiceAccounts the workloads' pods refer to are promoted
too (Secrets are then stored on the hub; service-account token Secrets and PersistentVolumeClaims stay in the
member). With --policy, an existing policy of yours places them instead; it must take over member objects
(conflictResolution: Overwrite) and select them.`,
		Example: `  flotilla promote deployment/web -n shop --cluster member1 --dependencies
  flotilla promote deploy/web svc/web -n shop --cluster member1 --dry-run=client`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(args); err != nil {
				return err
			}
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	o.hub.AddFlags(cmd.Flags())
	o.hub.AddNamespaceFlag(cmd.Flags(), "namespace of the objects, in the member and on the hub")
	cmd.Flags().StringVar(&o.cluster, "cluster", "", "the member cluster the objects run in (required)")
	cmd.Flags().StringVar(&o.policy, "policy", "", "an existing policy that places the objects, instead of a new one")
	cmd.Flags().BoolVar(&o.dependencies, "dependencies", false, "promote the ConfigMaps, Secrets and ServiceAccounts the workloads' pods use")
	cmdutil.AddDryRunFlag(cmd.Flags(), &o.dryRun, "the objects and the policy")
	return cmd
}

// memberObject is an object read from the member, ready to become a template.
type memberObject struct {
	obj      *unstructured.Unstructured
	resource schema.GroupResource
}

func (m memberObject) String() string { return m.resource.String() + "/" + m.obj.GetName() }

func (o *promoteOptions) run(ctx context.Context, out io.Writer) error {
	namespace, err := o.hub.Namespace()
	if err != nil {
		return err
	}
	_, hub, _, err := o.hub.Clients()
	if err != nil {
		return err
	}
	progress := cmdutil.NewProgress(out)
	read, err := o.memberReader(namespace)
	if err != nil {
		return err
	}
	var objects []memberObject
	for _, t := range o.targets {
		m, err := read(ctx, t.kind, t.name)
		if err != nil {
			return err
		}
		objects = append(objects, m)
	}
	if o.dependencies {
		deps, skipped, err := dependenciesOf(ctx, objects, read)
		if err != nil {
			return err
		}
		for _, s := range skipped {
			progress.Step("not promoted: " + s)
		}
		objects = append(objects, deps...)
	}
	for _, m := range objects {
		binding.StripServerSet(m.obj)
		progress.Step(fmt.Sprintf("read %s from %s", m, o.cluster))
	}
	// Nothing is written before every object is known to be new on the hub, and the policy to place them.
	for _, m := range objects {
		err := hub.Get(ctx, client.ObjectKeyFromObject(m.obj), m.obj.DeepCopy())
		switch {
		case err == nil:
			return fmt.Errorf("%s is already on the hub: promote creates templates; to place the hub's object, write a policy", m)
		case meta.IsNoMatchError(err):
			return fmt.Errorf("the hub does not serve %s: install its CustomResourceDefinition on the hub first", m.resource)
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("reading %s on the hub: %w", m, err)
		}
	}
	policy, err := o.placingPolicy(ctx, hub, namespace, objects)
	if err != nil {
		return err
	}
	if o.dryRun == cmdutil.DryRunClient {
		list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
		if policy.GetResourceVersion() == "" {
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(policy)
			if err != nil {
				return err
			}
			list.Items = append(list.Items, unstructured.Unstructured{Object: u})
		}
		for _, m := range objects {
			list.Items = append(list.Items, *m.obj)
		}
		return printObject(out, "yaml", list)
	}
	write := &client.CreateOptions{DryRun: o.dryRun.Options()}
	if namespaced(objects) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
		if err := hub.Create(ctx, ns, write); err == nil {
			progress.Step("created namespace " + namespace + " on the hub" + o.dryRun.Suffix())
		} else if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s on the hub: %w", namespace, err)
		}
	}
	// The policy first: the detector finds it when the templates appear, and claims them for it at once.
	if policy.GetResourceVersion() == "" {
		kind := policy.GetObjectKind().GroupVersionKind().Kind // Create empties a typed object's kind
		if err := hub.Create(ctx, policy, write); err != nil {
			return fmt.Errorf("creating the %s: %w", kind, err)
		}
		progress.Step(fmt.Sprintf("created %s %s%s", kind, policy.GetName(), o.dryRun.Suffix()))
	}
	for _, m := range objects {
		if err := hub.Create(ctx, m.obj, write); err != nil {
			return fmt.Errorf("creating %s on the hub: %w", m, err)
		}
		progress.Step(fmt.Sprintf("created %s on the hub%s", m, o.dryRun.Suffix()))
	}
	if !o.dryRun.Enabled() {
		progress.Step(fmt.Sprintf("%s takes them over in %s; flotilla status shows when it has", policy.GetName(), o.cluster))
	}
	return nil
}

// memberReader reads objects of the namespace (cluster-scoped ones by name alone) from the member, through
// the hub's proxy as the caller, naming their kinds as kubectl does (deploy, deployments.apps, ...).
func (o *promoteOptions) memberReader(namespace string) (func(ctx context.Context, kind, name string) (memberObject, error), error) {
	kubeconfig, err := proxyKubeconfig(&o.hub, o.cluster)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*kubeconfig, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	objects, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, kind, name string) (memberObject, error) {
		mapping, err := resolveKind(disco, kind)
		if err != nil {
			return memberObject{}, fmt.Errorf("%s/%s in %s: %w", kind, name, o.cluster, err)
		}
		r := objects.Resource(mapping.Resource)
		var obj *unstructured.Unstructured
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			obj, err = r.Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		} else {
			obj, err = r.Get(ctx, name, metav1.GetOptions{})
		}
		if err != nil {
			return memberObject{}, fmt.Errorf("reading %s %s in %s: %w", mapping.Resource.GroupResource(), name, o.cluster, err)
		}
		return memberObject{obj: obj, resource: mapping.Resource.GroupResource()}, nil
	}, nil
}

// dependenciesOf reads from the member the ConfigMaps, Secrets and ServiceAccounts the workloads' pods refer
// to (the built-in rules of the interpreter), each once and none already among objects. It leaves, and
// says why in skipped, PersistentVolumeClaims (their data is the member's) and service-account token Secrets
// (the member issues its own).
func dependenciesOf(ctx context.Context, objects []memberObject, read func(ctx context.Context, kind, name string) (memberObject, error)) (deps []memberObject, skipped []string, err error) {
	have := map[string]bool{}
	for _, m := range objects {
		have[m.obj.GetKind()+"/"+m.obj.GetName()] = true
	}
	for _, m := range objects {
		for _, d := range interpreter.Dependencies(m.obj) {
			key := d.Kind + "/" + d.Name
			switch {
			case have[key]:
				continue
			case d.Kind == "PersistentVolumeClaim":
				skipped = append(skipped, "persistentvolumeclaims/"+d.Name+": its data stays in the member")
				have[key] = true
				continue
			}
			have[key] = true
			dep, err := read(ctx, strings.ToLower(d.Kind), d.Name)
			if err != nil {
				return nil, nil, fmt.Errorf("a dependency of %s: %w", m, err)
			}
			if t, _, _ := unstructured.NestedString(dep.obj.Object, "type"); d.Kind == "Secret" && t == string(corev1.SecretTypeServiceAccountToken) {
				skipped = append(skipped, dep.String()+": a service-account token the member issued")
				continue
			}
			deps = append(deps, dep)
		}
	}
	return deps, skipped, nil
}

// placingPolicy is the policy that places objects on the cluster: --policy, read from the hub and checked,
// or a new one (not yet created: no resourceVersion) that selects exactly these objects and takes over
// their member copies.
func (o *promoteOptions) placingPolicy(ctx context.Context, hub client.Client, namespace string, objects []memberObject) (client.Object, error) {
	if o.policy != "" {
		return o.existingPolicy(ctx, hub, namespace, objects)
	}
	var selectors []policyv1alpha1.ResourceSelector
	for _, m := range objects {
		selectors = append(selectors, policyv1alpha1.ResourceSelector{APIVersion: m.obj.GetAPIVersion(), Kind: m.obj.GetKind(),
			Namespace: m.obj.GetNamespace(), Name: m.obj.GetName()})
	}
	spec := policyv1alpha1.PropagationSpec{
		ResourceSelectors:  selectors,
		Placement:          policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{o.cluster}}},
		ConflictResolution: policyv1alpha1.ConflictOverwrite,
	}
	first := objects[0].obj
	name := promotePolicyName(first.GetKind(), first.GetName())
	if allNamespaced(objects) {
		p := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: spec}
		p.SetGroupVersionKind(policyv1alpha1.GroupVersion.WithKind("PropagationPolicy"))
		return p, nil
	}
	p := &policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
	p.SetGroupVersionKind(policyv1alpha1.GroupVersion.WithKind("ClusterPropagationPolicy"))
	return p, nil
}

// existingPolicy reads --policy (a PropagationPolicy of the namespace, else a ClusterPropagationPolicy) and
// checks that it would do what promote needs: select every object and take over the member's copies.
func (o *promoteOptions) existingPolicy(ctx context.Context, hub client.Client, namespace string, objects []memberObject) (client.Object, error) {
	var (
		policy          client.Object
		policyNamespace string
		spec            *policyv1alpha1.PropagationSpec
	)
	pp := &policyv1alpha1.PropagationPolicy{}
	err := hub.Get(ctx, client.ObjectKey{Namespace: namespace, Name: o.policy}, pp)
	switch {
	case err == nil:
		policy, policyNamespace, spec = pp, namespace, &pp.Spec
	case apierrors.IsNotFound(err):
		cpp := &policyv1alpha1.ClusterPropagationPolicy{}
		if err := hub.Get(ctx, client.ObjectKey{Name: o.policy}, cpp); apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("--policy %s: no PropagationPolicy in %s and no ClusterPropagationPolicy of that name", o.policy, namespace)
		} else if err != nil {
			return nil, fmt.Errorf("--policy %s: %w", o.policy, err)
		}
		policy, spec = cpp, &cpp.Spec
	default:
		return nil, fmt.Errorf("--policy %s: %w", o.policy, err)
	}
	if spec.ConflictResolution != policyv1alpha1.ConflictOverwrite {
		return nil, fmt.Errorf("--policy %s would not take over the objects in %s (its conflictResolution is not Overwrite): set it, or leave --policy out for a policy of promote's own", o.policy, o.cluster)
	}
	for _, m := range objects {
		if selection.Policy(policyNamespace, spec.ResourceSelectors, m.obj) == selection.NoMatch {
			return nil, fmt.Errorf("--policy %s does not select %s: add a resource selector for it, or leave --policy out", o.policy, m)
		}
	}
	return policy, nil
}

// promotePolicyName is promote-KIND-NAME, lowercase, cut to a valid object name.
func promotePolicyName(kind, name string) string {
	n := "promote-" + strings.ToLower(kind) + "-" + name
	if len(n) > validation.DNS1123SubdomainMaxLength {
		n = strings.TrimRight(n[:validation.DNS1123SubdomainMaxLength], ".-")
	}
	return n
}

func allNamespaced(objects []memberObject) bool {
	for _, m := range objects {
		if m.obj.GetNamespace() == "" {
			return false
		}
	}
	return true
}

func namespaced(objects []memberObject) bool {
	for _, m := range objects {
		if m.obj.GetNamespace() != "" {
			return true
		}
	}
	return false
}
