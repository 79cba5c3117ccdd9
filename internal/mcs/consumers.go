package mcs

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// AnnotationDerivedService on an imported ServiceImport names the derived Service that serves it.
const AnnotationDerivedService = "multicluster.flotilla.io/derived-service"

// parseConsumers reads AnnotationConsumers: nil for every cluster, else the named clusters.
func parseConsumers(value string) ([]string, error) {
	value = strings.TrimSpace(value)
	if value == "" || value == "*" {
		return nil, nil
	}
	var out []string
	for _, name := range strings.Split(value, ",") {
		name = strings.TrimSpace(name)
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			return nil, fmt.Errorf("annotation %s: %q is not a cluster name: %s", AnnotationConsumers, name, strings.Join(errs, "; "))
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// consumerClusters returns the consumers that are joined: named ones that are not (yet) get nothing.
func (r *ExportController) consumerClusters(ctx context.Context, named []string) ([]string, error) {
	clusters := &clusterv1alpha1.ClusterList{}
	if err := r.Client.List(ctx, clusters); err != nil {
		return nil, err
	}
	var out []string
	for _, c := range clusters.Items {
		if named == nil || slices.Contains(named, c.Name) {
			out = append(out, c.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// ensureServiceImport writes the hub's ServiceImport: the merged spec and, in its status, the providers
// whose endpoints are imported. With no provider left the last spec stays (nil when there never was one),
// so consumers keep a Service with no endpoints until the export itself is deleted.
func (r *ExportController) ensureServiceImport(ctx context.Context, export *mcsv1alpha1.ServiceExport, spec mcsv1alpha1.ServiceImportSpec,
	obs *observation) (*mcsv1alpha1.ServiceImport, error) {
	imp := &mcsv1alpha1.ServiceImport{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(export), imp)
	switch {
	case apierrors.IsNotFound(err) && len(obs.providers) == 0:
		return nil, nil
	case apierrors.IsNotFound(err):
		imp = &mcsv1alpha1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: export.Namespace, Name: export.Name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: mcsv1alpha1.GroupVersion.String(), Kind: "ServiceExport",
				Name: export.Name, UID: export.UID, Controller: ptr.To(true)}}}, Spec: spec}
		if err := r.Client.Create(ctx, imp, client.FieldOwner(fieldManager)); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	case len(obs.providers) > 0 && !equality.Semantic.DeepEqual(imp.Spec, spec):
		patch := client.MergeFrom(imp.DeepCopy())
		imp.Spec = spec
		if err := r.Client.Patch(ctx, imp, patch, client.FieldOwner(fieldManager)); err != nil {
			return nil, err
		}
	}
	clusters := importedClusters(obs)
	if !equality.Semantic.DeepEqual(imp.Status.Clusters, clusters) {
		patch := client.MergeFrom(imp.DeepCopy())
		imp.Status.Clusters = clusters
		if err := r.Client.Status().Patch(ctx, imp, patch, client.FieldOwner(fieldManager)); err != nil {
			return nil, err
		}
	}
	return imp, nil
}

// importedClusters is the ServiceImport's status.clusters: the providers whose endpoints are imported.
func importedClusters(obs *observation) []mcsv1alpha1.ClusterStatus {
	var clusters []mcsv1alpha1.ClusterStatus
	for _, c := range slices.Sorted(maps.Keys(obs.slices)) {
		clusters = append(clusters, mcsv1alpha1.ClusterStatus{Cluster: c})
	}
	return clusters
}

// consumerWorks lists the consumer Works of an export.
func (r *ExportController) consumerWorks(ctx context.Context, export *mcsv1alpha1.ServiceExport) ([]workv1alpha1.Work, error) {
	works := &workv1alpha1.WorkList{}
	err := r.Client.List(ctx, works, client.MatchingLabels{LabelExportNamespace: export.Namespace, LabelServiceName: export.Name})
	return works.Items, err
}

// ConsumerWorks tells the hub's work sweeper which Works are ServiceExports' (it is a binding.WorkOwner,
// which the hub hands binding.SetupSweeper): a consumer Work whose ServiceExport is gone (its finalizer
// removed by hand) is released like a binding's. This package does not import binding for it: the agent
// links this package for its collector, and no binding controller.
type ConsumerWorks struct{}

// Kind names ServiceExports in the sweeper's events.
func (ConsumerWorks) Kind() string { return "ServiceExport" }

// New returns an empty ServiceExport.
func (ConsumerWorks) New() client.Object { return &mcsv1alpha1.ServiceExport{} }

// Of returns the ServiceExport a consumer Work's labels name.
func (ConsumerWorks) Of(w *workv1alpha1.Work) (client.ObjectKey, bool) {
	ns, name := w.Labels[LabelExportNamespace], w.Labels[LabelServiceName]
	return client.ObjectKey{Namespace: ns, Name: name}, ns != "" && name != ""
}

// Labels are the labels of an export's consumer Works.
func (ConsumerWorks) Labels(export client.Object) map[string]string {
	return map[string]string{LabelExportNamespace: export.GetNamespace(), LabelServiceName: export.GetName()}
}

// Owns says that every Work naming an export is the export's.
func (ConsumerWorks) Owns(client.Object, *workv1alpha1.Work) bool { return true }

// syncConsumers gives each consumer its Work and deletes the Works of clusters that stopped consuming (the
// annotation changed or the cluster left): the executor deletes what they placed, and nothing else.
func (r *ExportController) syncConsumers(ctx context.Context, export *mcsv1alpha1.ServiceExport, imp *mcsv1alpha1.ServiceImport,
	obs *observation, consumers []string) error {
	manifests, err := consumerManifests(imp, obs)
	if err != nil {
		return err
	}
	for _, c := range consumers {
		if err := r.ensureWork(ctx, export, c, manifests); err != nil {
			return err
		}
	}
	works, err := r.consumerWorks(ctx, export)
	if err != nil {
		return err
	}
	for i := range works {
		cluster, _ := clusterv1alpha1.ClusterOfNamespace(works[i].Namespace)
		if !slices.Contains(consumers, cluster) && works[i].DeletionTimestamp == nil {
			if err := client.IgnoreNotFound(r.Client.Delete(ctx, &works[i])); err != nil {
				return err
			}
		}
	}
	return nil
}

// ensureWork creates or changes the consumer Work of one cluster; nothing is written when nothing changed.
func (r *ExportController) ensureWork(ctx context.Context, export *mcsv1alpha1.ServiceExport, cluster string, manifests []workv1alpha1.Manifest) error {
	want := workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: manifests}, ConflictResolution: policyv1alpha1.ConflictAbort}
	work := &workv1alpha1.Work{}
	key := client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: ConsumerWorkName(export.Namespace, export.Name)}
	err := r.Client.Get(ctx, key, work)
	if apierrors.IsNotFound(err) {
		work = &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels:     map[string]string{LabelExportNamespace: export.Namespace, LabelServiceName: export.Name},
			Finalizers: []string{workv1alpha1.FinalizerExecution}}, Spec: want}
		return client.IgnoreAlreadyExists(r.Client.Create(ctx, work, client.FieldOwner(fieldManager)))
	}
	if err != nil || equality.Semantic.DeepEqual(work.Spec, want) {
		return err
	}
	patch := client.MergeFrom(work.DeepCopy())
	work.Spec = want
	return r.Client.Patch(ctx, work, patch, client.FieldOwner(fieldManager))
}

// consumerManifests is what every consumer gets: the ServiceImport CRD (a consumer may never have had one),
// the ServiceImport with the hub's status.clusters, its derived Service (no selector, the imported ports; clusterIP None when Headless) and
// the reachable providers' EndpointSlices, labelled so that kube-proxy serves them behind the derived Service
// and the member's EndpointSlice controller leaves them alone.
func consumerManifests(imp *mcsv1alpha1.ServiceImport, obs *observation) ([]workv1alpha1.Manifest, error) {
	crd, err := consumerServiceImportCRD()
	if err != nil {
		return nil, err
	}
	derived := DerivedName(imp.Name)
	objs := []runtime.Object{
		crd,
		&mcsv1alpha1.ServiceImport{
			TypeMeta: metav1.TypeMeta{APIVersion: mcsv1alpha1.GroupVersion.String(), Kind: "ServiceImport"},
			ObjectMeta: metav1.ObjectMeta{Namespace: imp.Namespace, Name: imp.Name,
				Annotations: map[string]string{AnnotationDerivedService: derived}},
			Spec: mcsv1alpha1.ServiceImportSpec{Type: imp.Spec.Type, Ports: imp.Spec.Ports, SessionAffinity: imp.Spec.SessionAffinity,
				SessionAffinityConfig: imp.Spec.SessionAffinityConfig},
			Status: mcsv1alpha1.ServiceImportStatus{Clusters: importedClusters(obs)},
		},
		derivedService(imp, derived),
	}
	for _, cluster := range slices.Sorted(maps.Keys(obs.slices)) {
		reported := slices.Clone(obs.slices[cluster])
		slices.SortFunc(reported, func(a, b discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
		for _, s := range reported {
			original := strings.TrimPrefix(s.Name, imp.Namespace+".")
			objs = append(objs, &discoveryv1.EndpointSlice{
				TypeMeta: metav1.TypeMeta{APIVersion: discoveryv1.SchemeGroupVersion.String(), Kind: "EndpointSlice"},
				ObjectMeta: metav1.ObjectMeta{Namespace: imp.Namespace, Name: importedSliceName(cluster, original), Labels: map[string]string{
					discoveryv1.LabelServiceName: derived, discoveryv1.LabelManagedBy: ManagedBy,
					LabelServiceName: imp.Name, LabelSourceCluster: cluster,
				}},
				AddressType: s.AddressType, Endpoints: s.Endpoints, Ports: s.Ports,
			})
		}
	}
	out := make([]workv1alpha1.Manifest, len(objs))
	for i, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, err
		}
		// Fields the API server would drop or fill: a stored Work must compare equal to a rendered one. Only
		// the ServiceImport's status is the hub's to give.
		unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
		if status, _, _ := unstructured.NestedMap(m, "status"); len(status) == 0 || m["kind"] != "ServiceImport" {
			unstructured.RemoveNestedField(m, "status")
		}
		raw, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		out[i] = workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}}
	}
	return out, nil
}

func derivedService(imp *mcsv1alpha1.ServiceImport, name string) *corev1.Service {
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: imp.Namespace, Name: name, Labels: map[string]string{LabelServiceName: imp.Name}},
		Spec:       corev1.ServiceSpec{SessionAffinity: imp.Spec.SessionAffinity, SessionAffinityConfig: imp.Spec.SessionAffinityConfig},
	}
	if imp.Spec.Type == mcsv1alpha1.Headless {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
	}
	for _, p := range imp.Spec.Ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, AppProtocol: p.AppProtocol, Port: p.Port})
	}
	return svc
}
