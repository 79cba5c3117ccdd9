package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
)

// tableAccept asks the member's API server to print the list itself, with the columns kubectl shows, and
// falls back to plain JSON for a server that cannot.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"

// fleetQuery is one `flotilla get KIND` over member clusters.
type fleetQuery struct {
	kind, name    string
	namespace     string
	allNamespaces bool
	selector      labels.Selector
	clusters      []string // empty: every cluster
	output        listOutput
	timeout       time.Duration
}

// clusterResult is what one cluster answered.
type clusterResult struct {
	cluster string
	table   *metav1.Table
	items   []unstructured.Unstructured
	err     error
}

// fleetGet validates a fleet-wide read and runs it.
func fleetGet(cmd *cobra.Command, hub cmdutil.HubFlags, args []string, q fleetQuery, clusterList string) error {
	if len(args) > 2 {
		return fmt.Errorf("flotilla get %s takes at most one NAME, got %d", args[0], len(args)-1)
	}
	if len(args) == 2 {
		q.name = args[1]
	}
	if q.timeout <= 0 {
		return fmt.Errorf("--cluster-timeout %s: must be positive", q.timeout)
	}
	if q.name != "" && q.allNamespaces {
		return fmt.Errorf("a NAME cannot be read with --all-namespaces: give --namespace")
	}
	if clusterList != "all" {
		for _, c := range strings.Split(clusterList, ",") {
			if bad := validation.IsDNS1123Label(c); len(bad) > 0 {
				return fmt.Errorf("--clusters %q: cluster %q: %s", clusterList, c, strings.Join(bad, "; "))
			}
			q.clusters = append(q.clusters, c)
		}
	}
	if q.namespace == "" {
		ns, err := hub.Namespace()
		if err != nil {
			return err
		}
		q.namespace = ns
	}
	cfg, c, _, err := hub.Clients()
	if err != nil {
		return err
	}
	return runFleetGet(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg, c, q)
}

// runFleetGet lists q.kind in each selected cluster through the hub's proxy, all clusters at once and each
// within q.timeout, and prints the rows with a CLUSTER column, then one error line per cluster that failed.
// It fails only when no cluster answered.
func runFleetGet(ctx context.Context, out, errOut io.Writer, hubConfig *rest.Config, hub client.Client, q fleetQuery) error {
	clusters, err := fleetClusters(ctx, hub, q.clusters)
	if err != nil {
		return err
	}
	results := make([]clusterResult, len(clusters))
	var wg sync.WaitGroup
	for i, cluster := range clusters {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, q.timeout)
			defer cancel()
			results[i] = getInCluster(cctx, hubConfig, cluster, q)
			if results[i].err != nil && cctx.Err() != nil {
				results[i].err = fmt.Errorf("no answer within %s (--cluster-timeout)", q.timeout)
			}
		})
	}
	wg.Wait()
	answered := 0
	for _, r := range results {
		if r.err == nil {
			answered++
		}
	}
	if !q.output.table() {
		list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
		for _, r := range results {
			list.Items = append(list.Items, r.items...)
		}
		if err := q.output.printObjects(out, list); err != nil {
			return err
		}
	} else if err := printFleetTable(out, results, q); err != nil {
		return err
	}
	for _, r := range results {
		if r.err != nil {
			fmt.Fprintf(errOut, "error: cluster %s: %v\n", r.cluster, r.err)
		}
	}
	if answered == 0 && len(results) > 0 {
		return fmt.Errorf("no cluster answered")
	}
	return nil
}

// fleetClusters resolves --clusters: every cluster of the hub, or the named ones, each of which must exist.
func fleetClusters(ctx context.Context, hub client.Client, names []string) ([]string, error) {
	list := &clusterv1alpha1.ClusterList{}
	if err := hub.List(ctx, list); err != nil {
		return nil, err
	}
	var all []string
	for _, c := range list.Items {
		all = append(all, c.Name)
	}
	sort.Strings(all)
	if len(names) == 0 {
		return all, nil
	}
	for _, n := range names {
		if !slices.Contains(all, n) {
			return nil, fmt.Errorf("--clusters: no cluster %q on the hub (clusters: %s)", n, strings.Join(all, ", "))
		}
	}
	return names, nil
}

// getInCluster resolves q.kind with the cluster's own discovery (a kind may be served by some members only)
// and reads it through the hub's proxy.
func getInCluster(ctx context.Context, hubConfig *rest.Config, cluster string, q fleetQuery) clusterResult {
	res := clusterResult{cluster: cluster}
	cfg := rest.CopyConfig(hubConfig)
	cfg.Host = strings.TrimSuffix(cfg.Host, "/") + proxyv1alpha1.ClusterProxyPath(cluster)
	cfg.Timeout = q.timeout
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		res.err = err
		return res
	}
	mapping, err := resolveKind(disco, q.kind)
	if err != nil {
		res.err = err
		return res
	}
	res.table, res.items, res.err = readKind(ctx, disco.RESTClient(), mapping, q)
	markCluster(res.items, cluster)
	return res
}

// markCluster marks each object with the cluster it was read in.
func markCluster(items []unstructured.Unstructured, cluster string) {
	for i := range items {
		a := items[i].GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[clusterv1alpha1.AnnotationCluster] = cluster
		items[i].SetAnnotations(a)
	}
}

// resolveKind finds a kind named on the command line (plural, singular, kind or short name) with a server's
// discovery, so the short names are the server's own (a CRD's shortNames).
func resolveKind(disco discovery.DiscoveryInterface, kind string) (*meta.RESTMapping, error) {
	cached := memory.NewMemCacheClient(disco)
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(cached), cached, nil)
	gvr, err := mapper.ResourceFor(schema.GroupVersionResource{Resource: strings.ToLower(kind)})
	if err != nil {
		return nil, err
	}
	return mapper.RESTMapping(schema.GroupKind{Group: gvr.Group, Kind: mustKind(mapper, gvr)}, gvr.Version)
}

// readKind reads q's objects of mapping from a server: as the server's table (with the objects' metadata,
// for the namespace and label columns) for a table output, or as objects.
func readKind(ctx context.Context, rc rest.Interface, mapping *meta.RESTMapping, q fleetQuery) (*metav1.Table, []unstructured.Unstructured, error) {
	gvr := mapping.Resource
	path := []string{"/api"}
	if gvr.Group != "" {
		path = []string{"/apis", gvr.Group}
	}
	path = append(path, gvr.Version)
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	if namespaced && !q.allNamespaces {
		path = append(path, "namespaces", q.namespace)
	}
	path = append(path, gvr.Resource)
	if q.name != "" {
		path = append(path, q.name)
	}
	req := rc.Get().AbsPath(path...)
	if q.name == "" && !q.selector.Empty() {
		req = req.Param("labelSelector", q.selector.String())
	}
	if q.output.table() {
		req = req.SetHeader("Accept", tableAccept).Param("includeObject", "Metadata")
	}
	raw, err := req.DoRaw(ctx)
	if err != nil {
		return nil, nil, err
	}
	if !q.output.table() {
		items, err := decodeItems(raw)
		return nil, items, err
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(raw, table); err != nil || table.Kind != "Table" {
		return nil, nil, fmt.Errorf("the server did not answer with a table: %v", err)
	}
	for i, row := range table.Rows {
		if row.Object.Raw != nil {
			m := &metav1.PartialObjectMetadata{}
			if err := json.Unmarshal(row.Object.Raw, m); err == nil {
				table.Rows[i].Object.Object = m
			}
		}
	}
	return table, nil, nil
}

// mustKind returns the kind of a resource, or "" (which RESTMapping then reports as the error).
func mustKind(mapper interface {
	KindFor(schema.GroupVersionResource) (schema.GroupVersionKind, error)
}, gvr schema.GroupVersionResource) string {
	gvk, _ := mapper.KindFor(gvr)
	return gvk.Kind
}

// decodeItems decodes a list or a single object.
func decodeItems(raw []byte) ([]unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal(raw, &obj.Object); err != nil {
		return nil, err
	}
	if !obj.IsList() {
		return []unstructured.Unstructured{*obj}, nil
	}
	list, err := obj.ToList()
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// printFleetTable prints the clusters' tables as one: CLUSTER, NAMESPACE with -A for namespaced kinds, then
// the member's own columns (all of them with -o wide), as kubectl prints them.
func printFleetTable(out io.Writer, results []clusterResult, q fleetQuery) error {
	merged := &metav1.Table{}
	withNamespace := false
	for _, r := range results {
		if r.table == nil {
			continue
		}
		if merged.ColumnDefinitions == nil {
			merged.ColumnDefinitions = append([]metav1.TableColumnDefinition{{Name: "Cluster", Type: "string"}}, r.table.ColumnDefinitions...)
		}
		for _, row := range r.table.Rows {
			ns := rowNamespace(row)
			withNamespace = withNamespace || (q.allNamespaces && ns != "")
			merged.Rows = append(merged.Rows, metav1.TableRow{Cells: append([]any{r.cluster, ns}, row.Cells...), Object: row.Object})
		}
	}
	if merged.ColumnDefinitions == nil {
		if len(results) > 0 && !slices.ContainsFunc(results, func(r clusterResult) bool { return r.err != nil }) {
			_, err := fmt.Fprintln(out, "No resources found")
			return err
		}
		return nil
	}
	// The namespace cell is kept only when it is a column.
	cols := merged.ColumnDefinitions
	if withNamespace {
		cols = slices.Insert(cols, 1, metav1.TableColumnDefinition{Name: "Namespace", Type: "string"})
	}
	for i := range merged.Rows {
		if !withNamespace {
			merged.Rows[i].Cells = slices.Delete(merged.Rows[i].Cells, 1, 2)
		}
	}
	merged.ColumnDefinitions = cols
	return q.output.tablePrinter().PrintObj(merged, out)
}

// rowNamespace is the namespace of a row's object (the server includes its metadata on request).
func rowNamespace(row metav1.TableRow) string {
	if row.Object.Raw == nil {
		return ""
	}
	var m metav1.PartialObjectMetadata
	if err := json.Unmarshal(row.Object.Raw, &m); err != nil {
		return ""
	}
	return m.Namespace
}
