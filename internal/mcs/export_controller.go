package mcs

import (
	"context"
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/registration"
)

// controllerName is the export controller's name in --controllers and its field manager.
const controllerName = "multicluster"

// ExportController turns each ServiceExport on the hub into export requests for the providers, a
// ServiceImport on the hub, and one Work per consumer holding the ServiceImport, its derived Service and the
// providers' EndpointSlices. It owns the ServiceExport's status conditions, the hub ServiceImport, the export
// requests and the consumer Works; it writes nothing else.
type ExportController struct {
	Client client.Client
}

// Setup registers the export controller. It is woken by ServiceExports, by the bindings and Works of
// Services (placement and per-cluster rendering decide the providers and what they export), by reported
// EndpointSlices, by the report quotas of cluster namespaces turning full or not, and by Clusters (joins,
// leaves and reachability change providers and consumers; their pod CIDRs what is imported).
func Setup(mgr ctrl.Manager) error {
	r := &ExportController{Client: mgr.GetClient()}
	userNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := clusterv1alpha1.ClusterOfNamespace(o.GetNamespace())
		return !ok
	})
	return ctrl.NewControllerManagedBy(mgr).Named(controllerName).
		For(&mcsv1alpha1.ServiceExport{}, builder.WithPredicates(userNamespace)).
		Watches(&workv1alpha1.ResourceBinding{}, handler.EnqueueRequestsFromMapFunc(serviceBinding)).
		Watches(&workv1alpha1.Work{}, handler.EnqueueRequestsFromMapFunc(serviceWork)).
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(reportedSlice)).
		Watches(&corev1.ResourceQuota{}, handler.EnqueueRequestsFromMapFunc(r.exportsOfQuota), builder.WithPredicates(quotaFilled)).
		Watches(&clusterv1alpha1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.allExports)).
		Complete(r)
}

// quotaFilled passes a cluster namespace's report quota when it turns full or stops being full: every report
// changes its count, and each report wakes its export anyway.
var quotaFilled = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return isReportQuota(e.Object) },
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, ok1 := e.ObjectOld.(*corev1.ResourceQuota)
		after, ok2 := e.ObjectNew.(*corev1.ResourceQuota)
		return ok1 && ok2 && isReportQuota(after) && quotaFull(before) != quotaFull(after)
	},
	DeleteFunc:  func(e event.DeleteEvent) bool { return isReportQuota(e.Object) },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

func isReportQuota(o client.Object) bool {
	_, ok := clusterv1alpha1.ClusterOfNamespace(o.GetNamespace())
	return ok && o.GetName() == registration.ReportQuota
}

// exportsOfQuota maps a cluster namespace's report quota to the exports the cluster is asked to provide.
func (r *ExportController) exportsOfQuota(ctx context.Context, o client.Object) []reconcile.Request {
	requests := &mcsv1alpha1.ServiceExportList{}
	if err := r.Client.List(ctx, requests, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, e := range requests.Items {
		if ns, name := e.Labels[LabelExportNamespace], e.Labels[LabelServiceName]; ns != "" && name != "" {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}})
		}
	}
	return out
}

var serviceKind = schema.GroupKind{Kind: "Service"}

// exportOfBinding is the ServiceExport a binding's Work may feed: bindings of Services are named
// NAME-service (a Service name of more than 55 characters gets a hashed binding name, and its Works' changes
// reach the export through its binding's).
func exportOfBinding(namespace, binding string) []reconcile.Request {
	name, ok := strings.CutSuffix(binding, "-service")
	if !ok || namespace == "" || workv1alpha1.BindingName(serviceKind, name) != binding {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: namespace, Name: name}}}
}

// serviceBinding maps a binding to the export of its Service by the resource it binds, which also covers
// Services whose names are too long to be read back from the binding's name.
func serviceBinding(_ context.Context, o client.Object) []reconcile.Request {
	b, ok := o.(*workv1alpha1.ResourceBinding)
	if !ok || b.Spec.Resource.APIVersion != "v1" || b.Spec.Resource.Kind != serviceKind.Kind {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.Resource.Name}}}
}

func serviceWork(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	return exportOfBinding(l[workv1alpha1.LabelBindingNamespace], l[workv1alpha1.LabelBindingName])
}

func reportedSlice(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if _, ok := clusterv1alpha1.ClusterOfNamespace(o.GetNamespace()); !ok || l[LabelExportNamespace] == "" || l[LabelServiceName] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: l[LabelExportNamespace], Name: l[LabelServiceName]}}}
}

func (r *ExportController) allExports(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &mcsv1alpha1.ServiceExportList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, e := range list.Items {
		if _, ok := clusterv1alpha1.ClusterOfNamespace(e.Namespace); !ok {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&e)})
		}
	}
	return out
}

// Reconcile: get → deletion (everything placed in consumers goes; provider objects stay) → finalizer →
// observe providers → export requests → merge → hub ServiceImport → consumer Works → one status patch.
func (r *ExportController) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	export := &mcsv1alpha1.ServiceExport{}
	if err := r.Client.Get(ctx, req.NamespacedName, export); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if export.DeletionTimestamp != nil {
		return ctrl.Result{}, r.finalize(ctx, export)
	}
	if !controllerutil.ContainsFinalizer(export, Finalizer) {
		patch := client.MergeFromWithOptions(export.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(export, Finalizer)
		if err := r.Client.Patch(ctx, export, patch, client.FieldOwner(fieldManager)); err != nil {
			return ctrl.Result{}, err
		}
	}
	st := &exportStatus{}
	err := r.reconcile(ctx, export, st)
	if perr := r.patchStatus(ctx, export, st, err); err == nil {
		err = perr
	}
	return ctrl.Result{}, err
}

func (r *ExportController) reconcile(ctx context.Context, export *mcsv1alpha1.ServiceExport, st *exportStatus) error {
	consumers, err := parseConsumers(export.Annotations[AnnotationConsumers])
	if err != nil {
		st.invalid(reasonInvalidConsumers, err.Error())
		return nil // a person must fix the annotation; nothing placed is touched meanwhile
	}
	obs, err := r.observe(ctx, export)
	if err != nil {
		return err
	}
	st.observed = obs
	if err := r.syncRequests(ctx, export, obs.providerClusters()); err != nil {
		return err
	}
	if obs.invalidReason != "" {
		st.invalid(obs.invalidReason, obs.invalidMessage)
	}
	spec, conflicts := Merge(obs.providers)
	st.conflicts = conflicts
	imp, err := r.ensureServiceImport(ctx, export, spec, obs)
	if err != nil || imp == nil {
		return err
	}
	targets, err := r.consumerClusters(ctx, consumers)
	if err != nil {
		return err
	}
	st.consumers = targets
	return r.syncConsumers(ctx, export, imp, obs, targets)
}

// finalize deletes the consumer Works (their executors delete what they placed), the export requests (the
// collectors then drop their reports) and the hub ServiceImport, then lets the ServiceExport go. The
// providers' Services and workloads are the bindings', and stay.
func (r *ExportController) finalize(ctx context.Context, export *mcsv1alpha1.ServiceExport) error {
	works, err := r.consumerWorks(ctx, export)
	if err != nil {
		return err
	}
	for i := range works {
		if works[i].DeletionTimestamp == nil {
			if err := client.IgnoreNotFound(r.Client.Delete(ctx, &works[i])); err != nil {
				return err
			}
		}
	}
	if err := r.syncRequests(ctx, export, nil); err != nil {
		return err
	}
	imp := &mcsv1alpha1.ServiceImport{}
	imp.Namespace, imp.Name = export.Namespace, export.Name
	if err := client.IgnoreNotFound(r.Client.Delete(ctx, imp)); err != nil {
		return err
	}
	if !controllerutil.ContainsFinalizer(export, Finalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(export.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(export, Finalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, export, patch, client.FieldOwner(fieldManager)))
}

var fieldManager = workv1alpha1.ControllerFieldManager(controllerName)

// serviceOf decodes the Service NAME among a Work's manifests, or returns nil.
func serviceOf(w *workv1alpha1.Work, name string) (*corev1.Service, error) {
	for _, m := range w.Spec.Workload.Manifests {
		svc := &corev1.Service{}
		if err := json.Unmarshal(m.Raw, svc); err != nil {
			return nil, err
		}
		if svc.Kind == "Service" && svc.APIVersion == "v1" && svc.Name == name {
			return svc, nil
		}
	}
	return nil, nil
}
