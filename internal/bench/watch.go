package bench

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/scheme"
)

// watchKind calls on for every change of objects of obj's kind (in namespace, or all namespaces for ""),
// deleted saying whether the object went away, until ctx ends. It returns once the first list was seen.
func watchKind(ctx context.Context, cfg *rest.Config, obj client.Object, namespace string, on func(obj client.Object, deleted bool)) error {
	opts := cache.Options{Scheme: scheme.New()}
	if namespace != "" {
		opts.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	c, err := cache.New(cfg, opts)
	if err != nil {
		return err
	}
	informer, err := c.GetInformer(ctx, obj)
	if err != nil {
		return err
	}
	call := func(o any, deleted bool) {
		if tombstone, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = tombstone.Obj
		}
		if o, ok := o.(client.Object); ok {
			on(o, deleted)
		}
	}
	_, err = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { call(o, false) },
		UpdateFunc: func(_, o any) { call(o, false) },
		DeleteFunc: func(o any) { call(o, true) },
	})
	if err != nil {
		return err
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("watching %T at %s: the first list did not complete", obj, cfg.Host)
	}
	return nil
}
