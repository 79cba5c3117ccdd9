package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/execution"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// The executor tests apply Works into the test hub's own API server, which serves as the member: it is a
// real kube-apiserver with the namespace and garbage collection controllers. Their Works live in namespaces
// that belong to no cluster, so the hub's own executors leave them alone, and each test drives its executor
// by calling Reconcile.

// newExecutor returns an executor of the test hub (it marks objects with the hub's ID) whose member is the
// test hub, reached with memberConfig (the hub's admin configuration when nil).
func newExecutor(t *testing.T, hub client.Client, memberConfig *rest.Config) *execution.Executor {
	t.Helper()
	if memberConfig == nil {
		memberConfig = env.Config
	}
	member, err := execution.NewMember(memberConfig)
	if err != nil {
		t.Fatal(err)
	}
	hubID, err := registration.HubID(context.Background(), env.Client)
	if err != nil {
		t.Fatal(err)
	}
	// Clusters as the agent has it: its Cluster read from the API server (hub reads it live), shared by the
	// Works finalized at once.
	return &execution.Executor{Hub: hub, Clusters: hub, HubID: hubID, MemberFor: func(context.Context, string) (*execution.Member, error) { return member, nil }}
}

func manifest(t *testing.T, obj client.Object) workv1alpha1.Manifest {
	t.Helper()
	gvks, _, err := env.Client.Scheme().ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}}
}

func annotatedConfigMap(namespace, name string, annotations map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: annotations},
		Data: map[string]string{"k": "v"}}
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// createWork creates a Work with the execution finalizer, as the binding controller does, and with a binding
// of its own when it has no labels (ownedWorkLabels).
func createWork(t *testing.T, namespace, name string, labels map[string]string, resolution policyv1alpha1.ConflictResolution,
	objs ...client.Object) *workv1alpha1.Work {
	t.Helper()
	ensureNamespace(t, namespace)
	labels = ownedWorkLabels(t, namespace, name, labels)
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels,
		Finalizers: []string{workv1alpha1.FinalizerExecution}}, Spec: workv1alpha1.WorkSpec{ConflictResolution: resolution}}
	for _, o := range objs {
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, manifest(t, o))
	}
	if err := env.Client.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

// reconcile runs the executor once on the Work and returns the Work as it is afterwards (nil once gone).
func reconcile(t *testing.T, e *execution.Executor, w *workv1alpha1.Work) (*workv1alpha1.Work, error) {
	t.Helper()
	ctx := context.Background()
	_, err := e.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(w)})
	out := &workv1alpha1.Work{}
	if getErr := env.Client.Get(ctx, client.ObjectKeyFromObject(w), out); apierrors.IsNotFound(getErr) {
		return nil, err
	} else if getErr != nil {
		t.Fatal(getErr)
	}
	return out, err
}

func manifestCondition(w *workv1alpha1.Work, name string) *metav1.Condition {
	for _, s := range w.Status.ManifestStatuses {
		if s.Identifier.Name == name {
			return meta.FindStatusCondition(s.Conditions, workv1alpha1.WorkConditionApplied)
		}
	}
	return nil
}

// present says whether the object is in the member and not being deleted.
func present(t *testing.T, obj client.Object) bool {
	t.Helper()
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return obj.GetDeletionTimestamp() == nil
}

func deleteWork(t *testing.T, w *workv1alpha1.Work) {
	t.Helper()
	if err := env.Client.Delete(context.Background(), w); err != nil {
		t.Fatal(err)
	}
}

// TestExecutorLetsGoWithoutDeletingWhatItDidNotCreate: when a Work goes, the objects it created go with it,
// but an object it adopted through conflictResolution: Overwrite, a namespace it did not create, and a PVC
// that followed the workload stay in the member.
func TestExecutorLetsGoWithoutDeletingWhatItDidNotCreate(t *testing.T) {
	ctx := context.Background()
	ensureNamespace(t, "exec-existing")
	foreign := annotatedConfigMap("exec-existing", "foreign", nil)
	if err := env.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "exec-existing", Name: "data",
		Annotations: map[string]string{workv1alpha1.AnnotationDependency: "true"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	e := newExecutor(t, env.Client, nil)
	w := createWork(t, "exec-works", "adopter", nil, policyv1alpha1.ConflictOverwrite,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "exec-existing"}},
		annotatedConfigMap("exec-existing", "foreign", nil), annotatedConfigMap("exec-existing", "own", nil), pvc)
	// The PVC does not bind (no volumes here): its Work is applied and not available, a status the executor
	// holds for up to a second before it writes it.
	testenv.Eventually(t, time.Minute, "the Work applied", func() error {
		var err error
		if w, err = reconcile(t, e, w); err != nil || !meta.IsStatusConditionTrue(w.Status.Conditions, workv1alpha1.WorkConditionApplied) {
			return fmt.Errorf("apply: %v, conditions %+v", err, w.Status.Conditions)
		}
		return nil
	})
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(foreign), foreign); err != nil || foreign.Annotations[workv1alpha1.AnnotationAdopted] != "true" {
		t.Fatalf("the adopted ConfigMap is not recorded as adopted: %v %v", err, foreign.Annotations)
	}

	deleteWork(t, w)
	if w, err := reconcile(t, e, w); err != nil || w != nil {
		t.Fatalf("finalize: %v, Work %v", err, w)
	}
	if present(t, annotatedConfigMap("exec-existing", "own", nil)) {
		t.Fatal("the ConfigMap the Work created is still there")
	}
	for _, kept := range []client.Object{annotatedConfigMap("exec-existing", "foreign", nil), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "exec-existing"}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "exec-existing", Name: "data"}}} {
		if !present(t, kept) {
			t.Fatalf("%T %s was deleted with the Work", kept, client.ObjectKeyFromObject(kept))
		}
	}
}

// TestExecutorPrunesWhatALostStatusWriteApplied: the status write after an apply is lost to a conflict;
// when the Work then drops one of the objects, the object is still removed from the member: by the same
// executor, which remembers what it applied, and by a new one (an agent restarted between the apply and the
// write), which finds the object by its mark when it sweeps the member. What the Work still lists stays.
func TestExecutorPrunesWhatALostStatusWriteApplied(t *testing.T) {
	ctx := context.Background()
	ensureNamespace(t, "exec-lost")
	hub, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	// lossy loses every status write that says the Work is applied while lose is set.
	var lose atomic.Bool
	lossy := interceptor.NewClient(hub, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if w, ok := obj.(*workv1alpha1.Work); ok && lose.Load() && meta.IsStatusConditionTrue(w.Status.Conditions, workv1alpha1.WorkConditionApplied) {
				return apierrors.NewConflict(workv1alpha1.GroupVersion.WithResource("works").GroupResource(), w.Name, fmt.Errorf("lost"))
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	manifests := func(names ...string) {
		t.Helper()
		w := &workv1alpha1.Work{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "exec-works", Name: "lost-status"}, w); err != nil {
			t.Fatal(err)
		}
		w.Spec.Workload.Manifests = nil
		for _, name := range names {
			w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, manifest(t, annotatedConfigMap("exec-lost", name, nil)))
		}
		if err := env.Client.Update(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	inMember := func(want map[string]bool) {
		t.Helper()
		for name, wanted := range want {
			if got := present(t, annotatedConfigMap("exec-lost", name, nil)); got != wanted {
				t.Fatalf("%s in the member: %v, want %v", name, got, wanted)
			}
		}
	}

	lose.Store(true)
	e := newExecutor(t, lossy, nil)
	w := createWork(t, "exec-works", "lost-status", nil, "", annotatedConfigMap("exec-lost", "a", nil), annotatedConfigMap("exec-lost", "b", nil))
	if _, err := reconcile(t, e, w); !apierrors.IsConflict(err) {
		t.Fatalf("the status write was not lost: %v", err)
	}
	inMember(map[string]bool{"a": true, "b": true})
	lose.Store(false)
	manifests("a")
	if _, err := reconcile(t, e, w); err != nil {
		t.Fatal(err)
	}
	inMember(map[string]bool{"a": true, "b": false})

	lose.Store(true)
	manifests("a", "c")
	if _, err := reconcile(t, e, w); !apierrors.IsConflict(err) {
		t.Fatalf("the status write was not lost: %v", err)
	}
	inMember(map[string]bool{"a": true, "c": true})
	manifests("a")
	if _, err := reconcile(t, newExecutor(t, env.Client, nil), w); err != nil {
		t.Fatal(err)
	}
	inMember(map[string]bool{"a": true})
	testenv.Eventually(t, time.Minute, "c, dropped while unrecorded, removed by the new executor's sweep", func() error {
		if present(t, annotatedConfigMap("exec-lost", "c", nil)) {
			return fmt.Errorf("c is still in the member")
		}
		return nil
	})
	inMember(map[string]bool{"a": true})
}

// TestExecutorRecreatesADeletedNamespace: a namespace deleted in the member is created again on the next
// apply, and a Namespace template's labels land on a namespace Flotilla first created implicitly.
func TestExecutorRecreatesADeletedNamespace(t *testing.T) {
	ctx := context.Background()
	e := newExecutor(t, env.Client, nil)
	w := createWork(t, "exec-works", "in-gone", nil, "", annotatedConfigMap("exec-gone", "c", nil))
	if w, err := reconcile(t, e, w); err != nil || !meta.IsStatusConditionTrue(w.Status.Conditions, workv1alpha1.WorkConditionApplied) {
		t.Fatalf("apply: %v", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "exec-gone"}}
	if err := env.Client.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyGone(t, env.Client, ns, time.Minute)
	w, err := reconcile(t, e, w)
	if err != nil || !meta.IsStatusConditionTrue(w.Status.Conditions, workv1alpha1.WorkConditionApplied) {
		t.Fatalf("apply after the namespace was deleted: %v, %+v", err, manifestCondition(w, "c"))
	}
	if !present(t, annotatedConfigMap("exec-gone", "c", nil)) {
		t.Fatal("the ConfigMap was not created again")
	}

	labelled := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "exec-gone", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}}}
	nsWork := createWork(t, "exec-works", "namespace", nil, "", labelled)
	if nsWork, err = reconcile(t, e, nsWork); err != nil || !meta.IsStatusConditionTrue(nsWork.Status.Conditions, workv1alpha1.WorkConditionApplied) {
		t.Fatalf("the Namespace template was not applied over the implicit namespace: %v, %+v", err, manifestCondition(nsWork, "exec-gone"))
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ns), ns); err != nil || ns.Labels["pod-security.kubernetes.io/enforce"] != "baseline" {
		t.Fatalf("namespace labels %v (%v), want the template's", ns.Labels, err)
	}
}

// TestExecutorRefusesManifestsOutsideTheBindingNamespace: a Work of a binding in namespace exec-team-a
// applies nothing into another namespace or at cluster scope, whatever its manifests say.
func TestExecutorRefusesManifestsOutsideTheBindingNamespace(t *testing.T) {
	labels := map[string]string{workv1alpha1.LabelBindingNamespace: "exec-team-a", workv1alpha1.LabelBindingName: "web"}
	w := createWork(t, "exec-works", "exec-team-a.web", labels, "", annotatedConfigMap("exec-team-a", "inside", nil), annotatedConfigMap("exec-team-b", "outside", nil),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "exec-team-c"}})
	w, err := reconcile(t, newExecutor(t, env.Client, nil), w)
	if err != nil {
		t.Fatal(err)
	}
	if c := manifestCondition(w, "inside"); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("the manifest in the binding's namespace: %+v", c)
	}
	for _, name := range []string{"outside", "exec-team-c"} {
		if c := manifestCondition(w, name); c == nil || c.Reason != execution.ReasonNamespaceMismatch {
			t.Fatalf("manifest %s: %+v, want %s", name, c, execution.ReasonNamespaceMismatch)
		}
	}
	if present(t, annotatedConfigMap("exec-team-b", "outside", nil)) || present(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "exec-team-c"}}) {
		t.Fatal("an object outside the binding's namespace was applied")
	}
}

// TestExecutorRetriesAReadErrorInsteadOfForcing: when reading the member object fails with anything but
// NotFound, the executor does not apply over it: the object stays as its owner made it.
func TestExecutorRetriesAReadErrorInsteadOfForcing(t *testing.T) {
	ensureNamespace(t, "exec-guarded")
	guarded := annotatedConfigMap("exec-guarded", "guarded", nil)
	if err := env.Client.Create(context.Background(), guarded); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/namespaces/exec-guarded/configmaps/guarded") {
				body := `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"InternalError","code":500,"message":"etcd hiccup"}`
				return &http.Response{StatusCode: http.StatusInternalServerError, Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
			}
			return rt.RoundTrip(r)
		})
	})
	changed := annotatedConfigMap("exec-guarded", "guarded", nil)
	changed.Data = map[string]string{"k": "flotilla's"}
	w := createWork(t, "exec-works", "guarded", nil, policyv1alpha1.ConflictOverwrite, changed)
	w, _ = reconcile(t, newExecutor(t, env.Client, cfg), w)
	if c := manifestCondition(w, "guarded"); c == nil || c.Reason != execution.ReasonApplyFailed {
		t.Fatalf("manifest condition %+v, want ApplyFailed", c)
	}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(guarded), guarded); err != nil || guarded.Data["k"] != "v" ||
		guarded.Labels[workv1alpha1.LabelManagedBy] != "" {
		t.Fatalf("the object was applied over after a failed read: %v %v %v", err, guarded.Data, guarded.Labels)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
