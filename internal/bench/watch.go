package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/logging"
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

// workDir makes a temporary directory for one benchmark run and sends the process's component logs to
// DIR/bench.log, so the terminal keeps the table and the progress lines. The returned function removes it.
func workDir(name string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "flotilla-bench-"+name+"-")
	if err != nil {
		return "", nil, err
	}
	if err := logging.Setup(0, filepath.Join(dir, "bench.log")); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// writeJSON writes v as indented JSON to path, when path is set.
func writeJSON(path string, v any) error {
	if path == "" {
		return nil
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
