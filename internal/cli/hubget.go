package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// hubKinds names, for help and errors, the Flotilla kinds flotilla get reads on the hub.
const hubKinds = "clusters (fc), clustersets (fcs), bindings, rb, crb, works, pp, cpp, op, cop, placements (fpl) and the other kinds of the flotilla category"

// flotillaGroup says whether an API group is one of Flotilla's (cluster.flotilla.io, work.flotilla.io …).
func flotillaGroup(group string) bool { return strings.HasSuffix(group, ".flotilla.io") }

// hubResource resolves kind with the hub's discovery, so that its short names are the CRDs' own. It returns
// the listing flotilla prints itself (clusters, rb, crb) or, for the other Flotilla kinds, their mapping. A
// kind the hub does not serve, or that is not Flotilla's, is an error that says to read it in the members
// with --clusters.
func hubResource(disco discovery.DiscoveryInterface, kind string) (string, *meta.RESTMapping, error) {
	mapping, err := resolveKind(disco, kind)
	if meta.IsNoMatchError(err) {
		return "", nil, fmt.Errorf("the hub serves no kind %q: flotilla get reads Flotilla's kinds on the hub (%s); to read %s in the member clusters, give --clusters all or --clusters NAME,…", kind, hubKinds, kind)
	}
	if err != nil {
		return "", nil, err
	}
	if !flotillaGroup(mapping.GroupVersionKind.Group) {
		return "", nil, fmt.Errorf("%s is not a Flotilla kind: flotilla get reads Flotilla's kinds on the hub (%s); to read %s in the member clusters, give --clusters all or --clusters NAME,… (kubectl reads the hub's own)", kind, hubKinds, kind)
	}
	switch mapping.GroupVersionKind.GroupKind() {
	case clusterv1alpha1.GroupVersion.WithKind("Cluster").GroupKind():
		return "clusters", nil, nil
	case workv1alpha1.GroupVersion.WithKind("ResourceBinding").GroupKind():
		return "rb", nil, nil
	case workv1alpha1.GroupVersion.WithKind("ClusterResourceBinding").GroupKind():
		return "crb", nil, nil
	}
	return "", mapping, nil
}

// hubGet lists a Flotilla kind on the hub as the hub's API server prints it (the CRD's printer columns),
// or prints its objects.
func (o *getOptions) hubGet(cmd *cobra.Command, disco discovery.DiscoveryInterface, mapping *meta.RESTMapping, args []string, q fleetQuery) error {
	if o.watch {
		return fmt.Errorf("--watch: flotilla get watches clusters and bindings only, not %s", args[0])
	}
	if len(args) > 2 {
		return fmt.Errorf("flotilla get %s takes at most one NAME, got %d", args[0], len(args)-1)
	}
	if len(args) == 2 {
		q.name = args[1]
	}
	namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
	if namespaced && q.name != "" && q.allNamespaces {
		return fmt.Errorf("a NAME cannot be read with --all-namespaces: give --namespace")
	}
	if namespaced && q.namespace == "" && !q.allNamespaces {
		ns, err := o.hub.Namespace()
		if err != nil {
			return err
		}
		q.namespace = ns
	}
	table, items, err := readKind(cmd.Context(), disco.RESTClient(), mapping, q)
	if err != nil {
		return err
	}
	output := o.output
	output.withNamespace = namespaced && q.allNamespaces
	if q.name != "" && len(items) == 1 {
		return output.printObjects(cmd.OutOrStdout(), items[0].Object)
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}, Items: items}
	return output.print(cmd.OutOrStdout(), cmd.ErrOrStderr(), list, func() *metav1.Table { return table })
}
