package mcs

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/registration"
)

// observation is what the hub knows of one exported Service.
type observation struct {
	// providers are the clusters the Service's binding places it in, with the Service as rendered for each.
	providers []Provider
	// slices are the EndpointSlices reported by providers that are reachable, by cluster.
	slices map[string][]discoveryv1.EndpointSlice
	// withdrawn are the providers whose endpoints are left out: the hub has not heard from them for the
	// grace period (the health monitor's unreachable taint).
	withdrawn []string
	// refused says, by provider, what endpointCheck took out of its reports.
	refused map[string]refusals
	// atQuota are the providers whose namespace holds all the reports its ResourceQuota allows.
	atQuota []string
	// invalidReason and invalidMessage say why the export is not valid, when it is not.
	invalidReason  mcsv1alpha1.ServiceExportConditionReason
	invalidMessage string
}

func (o *observation) providerClusters() []string {
	out := make([]string, len(o.providers))
	for i, p := range o.providers {
		out[i] = p.Cluster
	}
	return out
}

// observe reads the exported Service's template, binding and per-cluster Works, the reported slices (keeping
// what passes the checks) and the clusters' reachability. A Service that is missing, not placed or of type
// ExternalName has no providers.
func (r *ExportController) observe(ctx context.Context, export *mcsv1alpha1.ServiceExport) (*observation, error) {
	obs := &observation{slices: map[string][]discoveryv1.EndpointSlice{}, refused: map[string]refusals{}}
	key := client.ObjectKeyFromObject(export)
	svc := &corev1.Service{}
	if err := r.Client.Get(ctx, key, svc); apierrors.IsNotFound(err) {
		obs.invalidReason, obs.invalidMessage = mcsv1alpha1.ServiceExportReasonNoService, fmt.Sprintf("Service %s does not exist on the hub", key)
		return obs, nil
	} else if err != nil {
		return nil, err
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		obs.invalidReason, obs.invalidMessage = mcsv1alpha1.ServiceExportReasonInvalidServiceType, "a Service of type ExternalName cannot be exported"
		return obs, nil
	}
	b := &workv1alpha1.ResourceBinding{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: workv1alpha1.BindingName(serviceKind, key.Name)}, b)
	if apierrors.IsNotFound(err) {
		obs.invalidReason, obs.invalidMessage = mcsv1alpha1.ServiceExportReasonNoService,
			fmt.Sprintf("Service %s is not placed in any cluster: no PropagationPolicy selects it", key)
		return obs, nil
	} else if err != nil {
		return nil, err
	}
	for _, target := range b.Spec.Clusters {
		w := &workv1alpha1.Work{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(target.Name), Name: workv1alpha1.WorkName(b.Namespace, b.Name)}, w)
		if apierrors.IsNotFound(err) {
			continue // not rendered there yet: the Work's creation brings the export back
		} else if err != nil {
			return nil, err
		}
		rendered, err := serviceOf(w, key.Name)
		if err != nil {
			return nil, fmt.Errorf("work %s/%s: %w", w.Namespace, w.Name, err)
		}
		if rendered != nil {
			obs.providers = append(obs.providers, Provider{Cluster: target.Name, Since: w.CreationTimestamp.Time, Service: rendered})
		}
	}
	clusters := &clusterv1alpha1.ClusterList{}
	if err := r.Client.List(ctx, clusters); err != nil {
		return nil, err
	}
	providing := obs.providerClusters()
	for _, c := range clusters.Items {
		if slices.Contains(providing, c.Name) && unreachable(&c) {
			obs.withdrawn = append(obs.withdrawn, c.Name)
		}
	}
	reported := &discoveryv1.EndpointSliceList{}
	if err := r.Client.List(ctx, reported, client.MatchingLabels{LabelExportNamespace: key.Namespace, LabelServiceName: key.Name}); err != nil {
		return nil, err
	}
	for _, s := range reported.Items {
		cluster, ok := clusterv1alpha1.ClusterOfNamespace(s.Namespace)
		if ok && slices.Contains(providing, cluster) && !slices.Contains(obs.withdrawn, cluster) {
			obs.slices[cluster] = append(obs.slices[cluster], s)
		}
	}
	return obs, r.checkEndpoints(ctx, obs, clusters.Items)
}

// checkEndpoints keeps of each provider's reports what passes its endpointCheck, counts what it refused, and
// notes the providers whose namespace holds as many reports as its ResourceQuota allows.
func (r *ExportController) checkEndpoints(ctx context.Context, obs *observation, clusters []clusterv1alpha1.Cluster) error {
	for _, p := range obs.providers {
		if slices.Contains(obs.withdrawn, p.Cluster) {
			continue
		}
		full, err := r.reportsAtQuota(ctx, p.Cluster)
		if err != nil {
			return err
		}
		if full {
			obs.atQuota = append(obs.atQuota, p.Cluster)
		}
		reported, ok := obs.slices[p.Cluster]
		if !ok {
			continue
		}
		var podCIDRs []string
		if i := slices.IndexFunc(clusters, func(c clusterv1alpha1.Cluster) bool { return c.Name == p.Cluster }); i >= 0 {
			podCIDRs = clusters[i].Status.PodCIDRs
		}
		kept, refused := newEndpointCheck(p.Service, podCIDRs).filter(reported)
		obs.slices[p.Cluster] = kept
		if refused.any() {
			obs.refused[p.Cluster] = refused
		}
	}
	return nil
}

// reportsAtQuota reports whether a cluster's namespace holds as many EndpointSlice reports as its
// ResourceQuota allows: its collector is refused the next one, so the cluster's endpoints may be incomplete.
func (r *ExportController) reportsAtQuota(ctx context.Context, cluster string) (bool, error) {
	quota := &corev1.ResourceQuota{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: registration.ReportQuota}, quota)
	if err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return quotaFull(quota), nil
}

// quotaFull reports whether a ResourceQuota's used count of reported EndpointSlices reached its hard limit.
func quotaFull(q *corev1.ResourceQuota) bool {
	hard, ok := q.Status.Hard[registration.ReportedSlicesResource]
	used := q.Status.Used[registration.ReportedSlicesResource]
	return ok && used.Cmp(hard) >= 0
}

// unreachable: the health monitor has not heard from the cluster for the grace period.
func unreachable(c *clusterv1alpha1.Cluster) bool {
	return slices.ContainsFunc(c.Spec.Taints, func(t corev1.Taint) bool { return t.Key == clusterv1alpha1.TaintClusterUnreachable })
}

// syncRequests makes the export requests of the Service exactly those of providers: one ServiceExport
// NAMESPACE.NAME in each provider's cluster namespace.
func (r *ExportController) syncRequests(ctx context.Context, export *mcsv1alpha1.ServiceExport, providers []string) error {
	labels := map[string]string{LabelExportNamespace: export.Namespace, LabelServiceName: export.Name}
	have := &mcsv1alpha1.ServiceExportList{}
	if err := r.Client.List(ctx, have, client.MatchingLabels(labels)); err != nil {
		return err
	}
	name := requestName(export.Namespace, export.Name)
	for _, cluster := range providers {
		ns := clusterv1alpha1.ClusterNamespace(cluster)
		if slices.ContainsFunc(have.Items, func(e mcsv1alpha1.ServiceExport) bool { return e.Namespace == ns && e.Name == name }) {
			continue
		}
		request := &mcsv1alpha1.ServiceExport{}
		request.Namespace, request.Name, request.Labels = ns, name, labels
		if err := r.Client.Create(ctx, request, client.FieldOwner(fieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	for i := range have.Items {
		cluster, ok := clusterv1alpha1.ClusterOfNamespace(have.Items[i].Namespace)
		if ok && !slices.Contains(providers, cluster) {
			if err := client.IgnoreNotFound(r.Client.Delete(ctx, &have.Items[i])); err != nil {
				return err
			}
		}
	}
	return nil
}
