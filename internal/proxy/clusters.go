package proxy

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
)

// clustersResource is the resource the group serves.
var clustersResource = proxyv1alpha1.GroupVersion.WithResource(proxyv1alpha1.ResourceClusters).GroupResource()

// clusterREST serves get and list of clusters: Flotilla's Clusters, read from the hub, so that a client
// discovers what it may proxy to under the proxy group itself.
type clusterREST struct {
	clusters client.Reader
	rest.TableConvertor
}

var (
	_ rest.Getter               = &clusterREST{}
	_ rest.Lister               = &clusterREST{}
	_ rest.Scoper               = &clusterREST{}
	_ rest.SingularNameProvider = &clusterREST{}
)

func newClusterREST(clusters client.Reader) *clusterREST {
	return &clusterREST{clusters: clusters, TableConvertor: rest.NewDefaultTableConvertor(clustersResource)}
}

func (r *clusterREST) New() runtime.Object     { return &clusterv1alpha1.Cluster{} }
func (r *clusterREST) NewList() runtime.Object { return &clusterv1alpha1.ClusterList{} }
func (r *clusterREST) Destroy()                {}
func (r *clusterREST) NamespaceScoped() bool   { return false }
func (r *clusterREST) GetSingularName() string { return "cluster" }
func (r *clusterREST) cluster(ctx context.Context, name string) (*clusterv1alpha1.Cluster, error) {
	cluster := &clusterv1alpha1.Cluster{}
	if err := r.clusters.Get(ctx, client.ObjectKey{Name: name}, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, apierrors.NewNotFound(clustersResource, name)
		}
		return nil, err
	}
	return cluster, nil
}

// Get returns a copy of the named Cluster.
func (r *clusterREST) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	return r.cluster(ctx, name)
}

// List returns the Clusters its label selector matches.
func (r *clusterREST) List(ctx context.Context, o *metainternalversion.ListOptions) (runtime.Object, error) {
	var opts []client.ListOption
	if o != nil && o.LabelSelector != nil {
		opts = append(opts, client.MatchingLabelsSelector{Selector: o.LabelSelector})
	}
	list := &clusterv1alpha1.ClusterList{}
	if err := r.clusters.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	return list, nil
}
