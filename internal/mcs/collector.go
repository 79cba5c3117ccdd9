package mcs

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// SliceLister lists a member's EndpointSlices of Service namespace/name. It returns an error, never an
// empty list, when the member cannot tell.
type SliceLister func(ctx context.Context, namespace, name string) ([]discoveryv1.EndpointSlice, error)

// Collector reports to the hub the EndpointSlices of the Services a cluster is asked to export. The hub asks
// with an export request: a ServiceExport NAMESPACE.NAME in the cluster's namespace, labelled with the
// Service's namespace and name. The report is one EndpointSlice NAMESPACE.SLICE in the cluster's namespace per
// member slice, labelled with the Service and the source cluster; it is the only thing the collector writes,
// and it writes only in the cluster's namespace (the agent may write nowhere else).
type Collector struct {
	// Hub reads export requests and reports and writes reports.
	Hub client.Client
	// Member returns the lister of a cluster's member, or nil when this collector does not serve the cluster.
	Member func(ctx context.Context, cluster string) (SliceLister, error)
	// FieldManager names the collector in the reports' managedFields.
	FieldManager string
	// Resync is how often a request is looked at again when nothing woke it; 0: only when woken (the agent
	// watches the member's slices).
	Resync time.Duration
}

// Reconcile brings the reports of one export request in line with the member's EndpointSlices; a request
// that is gone or being deleted leaves no report behind. Member objects are only read.
func (c *Collector) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cluster, ok := clusterv1alpha1.ClusterOfNamespace(req.Namespace)
	namespace, name, named := splitRequestName(req.Name)
	if !ok || !named {
		return ctrl.Result{}, nil
	}
	request := &mcsv1alpha1.ServiceExport{}
	err := c.Hub.Get(ctx, req.NamespacedName, request)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	exported := err == nil && request.DeletionTimestamp == nil
	var want []*discoveryv1.EndpointSlice
	if exported {
		list, err := c.Member(ctx, cluster)
		if err != nil || list == nil {
			return ctrl.Result{}, err
		}
		slices, err := list(ctx, namespace, name)
		if err != nil {
			return ctrl.Result{}, err
		}
		for i := range slices {
			want = append(want, report(cluster, namespace, name, &slices[i]))
		}
	}
	have := &discoveryv1.EndpointSliceList{}
	if err := c.Hub.List(ctx, have, client.InNamespace(req.Namespace),
		client.MatchingLabels{LabelExportNamespace: namespace, LabelServiceName: name}); err != nil {
		return ctrl.Result{}, err
	}
	if err := c.sync(ctx, req.Namespace, want, have.Items); err != nil {
		return ctrl.Result{}, err
	}
	if exported {
		return ctrl.Result{RequeueAfter: c.Resync}, nil
	}
	return ctrl.Result{}, nil
}

// sync deletes the reports no member slice stands for, then writes those that differ from what the hub has.
// Deleting first makes room under the namespace's ResourceQuota (registration.ReportQuota); a report the hub
// refuses (the quota is full) keeps none of the others from being written, and the error names each one
// refused, so the request is tried again with the controller's backoff and the log says why.
func (c *Collector) sync(ctx context.Context, namespace string, want []*discoveryv1.EndpointSlice, have []discoveryv1.EndpointSlice) error {
	existing := map[string]*discoveryv1.EndpointSlice{}
	for i := range have {
		existing[have[i].Name] = &have[i]
	}
	wanted := map[string]bool{}
	for _, w := range want {
		wanted[w.Name] = true
	}
	for name, stale := range existing {
		if wanted[name] {
			continue
		}
		if err := client.IgnoreNotFound(c.Hub.Delete(ctx, stale)); err != nil {
			return err
		}
	}
	var refused []error
	for _, w := range want {
		w.Namespace = namespace
		if got, ok := existing[w.Name]; ok && sameSlice(got, w) {
			continue
		}
		if err := c.Hub.Patch(ctx, w, client.Apply, client.FieldOwner(c.FieldManager), client.ForceOwnership); err != nil {
			refused = append(refused, fmt.Errorf("reporting EndpointSlice %s/%s: %w", namespace, w.Name, err))
		}
	}
	return errors.Join(refused...)
}

// report is the hub copy of a member EndpointSlice: its addresses and ports, and labels that say which
// Service and cluster it stands for. Of each endpoint's reference only the kind, namespace and name stay, for
// the hub to see whether a hostname names a Pod; node names mean nothing elsewhere.
func report(cluster, namespace, name string, s *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	out := &discoveryv1.EndpointSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: discoveryv1.SchemeGroupVersion.String(), Kind: "EndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{Name: reportName(namespace, s.Name), Labels: map[string]string{
			LabelExportNamespace: namespace, LabelServiceName: name, LabelSourceCluster: cluster, discoveryv1.LabelManagedBy: ManagedBy,
		}},
		AddressType: s.AddressType,
		Ports:       s.Ports,
	}
	for _, e := range s.Endpoints {
		e := *e.DeepCopy()
		if ref := e.TargetRef; ref != nil {
			e.TargetRef = &corev1.ObjectReference{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
		}
		e.NodeName = nil
		out.Endpoints = append(out.Endpoints, e)
	}
	return out
}

func sameSlice(a, b *discoveryv1.EndpointSlice) bool {
	return equality.Semantic.DeepEqual(a.Labels, b.Labels) && a.AddressType == b.AddressType &&
		equality.Semantic.DeepEqual(a.Endpoints, b.Endpoints) && equality.Semantic.DeepEqual(a.Ports, b.Ports)
}
