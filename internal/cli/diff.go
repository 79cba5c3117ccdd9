package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
)

// diffOptions are the flags of flotilla diff.
type diffOptions struct {
	hub          cmdutil.HubFlags
	file         string
	fieldManager string
}

func newDiffCommand() *cobra.Command {
	o := &diffOptions{}
	cmd := &cobra.Command{
		Use:   "diff -f FILE",
		Short: "Preview where a change of policies or templates would place what, and how each cluster's copy would change",
		Long: `Diff sends each object of FILE (- for standard input) to the hub as a server-side dry-run apply, so the hub
checks and defaults it and persists nothing, then runs Flotilla's own decisions on the result here: which
policy claims each template, the scheduler's placement, and the override policies on each cluster's copy.

For each template the change touches (one in FILE, one a changed propagation policy selects, one a changed
override policy applies to), it prints the clusters that gain it (+) or lose it (-), replicas that change,
and for each cluster a unified diff of the manifest it would receive. A template no policy places says so.

Nothing is written to the hub or to any member. The preview is the scheduler's answer for the fleet as it is
now; the hub's own pass may differ when clusters change meanwhile.`,
		Example: `  flotilla diff -f policy.yaml
  kubectl kustomize overlays/prod | flotilla diff -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.file == "" {
				return errors.New("-f is required: the file of policies and templates to preview (- for standard input)")
			}
			objs, err := readObjects(o.file, cmd.InOrStdin())
			if err != nil {
				return err
			}
			namespace, err := o.hub.Namespace()
			if err != nil {
				return err
			}
			cfg, c, kube, err := o.hub.Clients()
			if err != nil {
				return err
			}
			dyn, err := dynamic.NewForConfig(cfg)
			if err != nil {
				return err
			}
			mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery())), kube.Discovery(), nil)
			h := &hubView{client: c, dynamic: dyn, mapper: mapper}
			changes, err := h.dryRunApply(cmd.Context(), objs, namespace, o.fieldManager)
			if err != nil {
				return err
			}
			previews, err := h.preview(cmd.Context(), changes)
			if err != nil {
				return err
			}
			return printPreviews(cmd.OutOrStdout(), previews)
		},
	}
	o.hub.AddFlags(cmd.Flags())
	o.hub.AddNamespaceFlag(cmd.Flags(), "namespace of the namespaced objects in FILE that name none")
	cmd.Flags().StringVarP(&o.file, "filename", "f", "", "file of policies and templates, YAML or JSON (- for standard input)")
	cmd.Flags().StringVar(&o.fieldManager, "field-manager", "kubectl", "field manager of the dry-run apply: the one that applies these objects for real (kubectl apply --server-side uses kubectl)")
	return cmd
}

// readObjects reads the objects of a YAML or JSON stream (a List's items too); each needs apiVersion, kind
// and name.
func readObjects(file string, stdin io.Reader) ([]*unstructured.Unstructured, error) {
	var in io.Reader = stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("-f: %w", err)
		}
		defer f.Close()
		in = f
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(in, 4096)
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		obj := map[string]any{}
		if err := decoder.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: object %d: %w", file, i, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		items := []*unstructured.Unstructured{u}
		if u.IsList() {
			list, err := u.ToList()
			if err != nil {
				return nil, fmt.Errorf("%s: object %d: %w", file, i, err)
			}
			items = items[:0]
			for j := range list.Items {
				items = append(items, &list.Items[j])
			}
		}
		for _, item := range items {
			if item.GetAPIVersion() == "" || item.GetKind() == "" || item.GetName() == "" {
				return nil, fmt.Errorf("%s: object %d: want apiVersion, kind and metadata.name", file, i)
			}
			out = append(out, item)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no objects", file)
	}
	return out, nil
}

// change is one object of the file: as the hub has it now (nil when new) and as the dry-run apply left it.
type change struct {
	before, after *unstructured.Unstructured
	namespaced    bool
}

// dryRunApply applies each object to the hub with dryRun=All, in the namespace given when a namespaced
// object names none, and reads what it replaces. A refusal of the hub (admission, validation) is the error.
func (h *hubView) dryRunApply(ctx context.Context, objs []*unstructured.Unstructured, namespace, fieldManager string) ([]change, error) {
	var out []change
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		mapping, err := h.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
		var r dynamic.ResourceInterface = h.dynamic.Resource(mapping.Resource)
		if namespaced {
			if obj.GetNamespace() == "" {
				obj.SetNamespace(namespace)
			}
			r = h.dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace())
		} else {
			obj.SetNamespace("")
		}
		before, err := r.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			before = nil
		} else if err != nil {
			return nil, fmt.Errorf("reading %s: %w", describeObject(obj), err)
		}
		after, err := r.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: fieldManager, Force: true})
		if err != nil {
			return nil, fmt.Errorf("the hub refuses %s: %w", describeObject(obj), err)
		}
		out = append(out, change{before: before, after: after, namespaced: namespaced})
	}
	return out, nil
}

// describeObject names an object as the diff prints it: Kind namespace/name.
func describeObject(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetKind() + " " + obj.GetName()
	}
	return obj.GetKind() + " " + obj.GetNamespace() + "/" + obj.GetName()
}

// objectKey identifies an object across versions of its kind.
type objectKey struct {
	gk              schema.GroupKind
	namespace, name string
}

func keyOf(obj *unstructured.Unstructured) objectKey {
	return objectKey{obj.GroupVersionKind().GroupKind(), obj.GetNamespace(), obj.GetName()}
}
