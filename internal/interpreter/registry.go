package interpreter

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
)

// builtinFS holds the customizations shipped in the binary, InterpreterCustomization objects like any
// user's, for kinds widely run on fleets.
//
//go:embed builtin/*.yaml
var builtinFS embed.FS

// builtins are the shipped customizations, compiled once, by target.
var builtins = sync.OnceValues(func() (map[schema.GroupVersionKind]*Customization, error) {
	files, err := fs.Glob(builtinFS, "builtin/*.yaml")
	if err != nil {
		return nil, err
	}
	out := map[schema.GroupVersionKind]*Customization{}
	for _, f := range files {
		data, err := builtinFS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		ic := &configv1alpha1.InterpreterCustomization{}
		if err := yaml.UnmarshalStrict(data, ic); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		c, errs := Compile(ic)
		if len(errs) > 0 {
			return nil, fmt.Errorf("%s: %w", f, errs.ToAggregate())
		}
		c.Name = "builtin:" + ic.Name
		out[c.Target] = c
	}
	return out, nil
})

// Registry finds the customization of a kind: the user's InterpreterCustomization when there is one (read
// from a cache the manager keeps by watching them), else a shipped one. Compiled customizations are kept
// until their object changes, so each is compiled once per change, not on every reconcile.
type Registry struct {
	// Reader lists InterpreterCustomizations; nil means only the shipped ones are known.
	Reader client.Reader

	mu       sync.Mutex
	compiled map[types.UID]compiled
	// webhooks are the webhooks prepared (webhook.go), by configuration UID, resourceVersion and index.
	webhooks map[string]*Webhook
}

type compiled struct {
	resourceVersion string
	customization   *Customization
}

// NewRegistry returns a registry reading user customizations from reader (a cached client).
func NewRegistry(reader client.Reader) *Registry { return &Registry{Reader: reader} }

// For returns the customization of a kind, or nil when none customizes it. An error reading the user's
// customizations is returned, never read as "there is none": the built-in rules would then quietly decide
// for a kind its owner customized.
func (r *Registry) For(ctx context.Context, gvk schema.GroupVersionKind) (*Customization, error) {
	c, err := r.user(ctx, gvk)
	if c != nil || err != nil {
		return c, err
	}
	return shipped(gvk)
}

// user returns the user's customization of a kind, nil when there is none.
func (r *Registry) user(ctx context.Context, gvk schema.GroupVersionKind) (*Customization, error) {
	if r != nil && r.Reader != nil {
		list := &configv1alpha1.InterpreterCustomizationList{}
		// Read-only: the cache's objects are not copied for a lookup every reconcile of every binding makes.
		if err := r.Reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("reading InterpreterCustomizations: %w", err)
		}
		var matching []*configv1alpha1.InterpreterCustomization
		for i := range list.Items {
			if targets(list.Items[i].Spec.Target, gvk) >= 0 && list.Items[i].DeletionTimestamp == nil {
				matching = append(matching, &list.Items[i])
			}
		}
		if len(matching) > 0 {
			// The exact version first, then by name.
			slices.SortFunc(matching, func(a, b *configv1alpha1.InterpreterCustomization) int {
				if d := targets(b.Spec.Target, gvk) - targets(a.Spec.Target, gvk); d != 0 {
					return d
				}
				return strings.Compare(a.Name, b.Name)
			})
			return r.compile(matching[0]), nil
		}
	}
	return nil, nil
}

// shipped returns the customization of a kind shipped in the binary, nil when there is none.
func shipped(gvk schema.GroupVersionKind) (*Customization, error) {
	shipped, err := builtins()
	if err != nil {
		return nil, err
	}
	if c, ok := shipped[gvk]; ok {
		return c, nil
	}
	for target, c := range shipped {
		if target.GroupKind() == gvk.GroupKind() {
			return c, nil
		}
	}
	return nil, nil
}

// targets says how well a customization's target matches a kind: 1 for its exact apiVersion, 0 for another
// version of its group and kind, -1 for none. Other versions match because a template is read under the
// version Flotilla watches its kind under (the API server's preferred one), which need not be the version
// the customization was written for; a CRD's versions describe the same objects.
func targets(t configv1alpha1.CustomizationTarget, gvk schema.GroupVersionKind) int {
	gv, err := schema.ParseGroupVersion(t.APIVersion)
	switch {
	case err != nil || t.Kind != gvk.Kind || gv.Group != gvk.Group:
		return -1
	case gv.Version == gvk.Version:
		return 1
	}
	return 0
}

// Customizes says whether a customization of target may apply to objects of gvk (of any version of its
// group and kind: For picks among several).
func Customizes(target configv1alpha1.CustomizationTarget, gvk schema.GroupVersionKind) bool {
	return targets(target, gvk) >= 0
}

// compile returns ic compiled, from the registry's memory when it did not change. Operations
// that do not compile (a customization written before admission checked it) are left out of programs and
// fail when used, through brokenProgram.
func (r *Registry) compile(ic *configv1alpha1.InterpreterCustomization) *Customization {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.compiled[ic.UID]; ok && c.resourceVersion == ic.ResourceVersion {
		return c.customization
	}
	c, errs := Compile(ic)
	for _, e := range errs {
		op, _, _ := strings.Cut(strings.TrimPrefix(e.Field, "spec.customizations."), ".") // <operation>.<language>
		if _, ok := signatures[Operation(op)]; ok {
			c.programs[Operation(op)] = brokenProgram{e}
		}
	}
	if r.compiled == nil {
		r.compiled = map[types.UID]compiled{}
	}
	// Forget customizations deleted meanwhile, so the memory holds only current ones.
	if len(r.compiled) > 64 {
		clear(r.compiled)
	}
	r.compiled[ic.UID] = compiled{resourceVersion: ic.ResourceVersion, customization: c}
	return c
}

// brokenProgram stands for an operation that did not compile: it fails with the compiler's message.
type brokenProgram struct{ err error }

func (p brokenProgram) Eval(context.Context, map[string]any) (any, error) { return nil, p.err }
