// Package mirror serves peer systems' APIs on the hub by mirroring: each object of a peer kind (Karmada's
// policy.karmada.io PropagationPolicy, for one) is kept as an object of its Flotilla twin (policy.flotilla.io
// PropagationPolicy) of the same name and namespace, which the peer object owns; the twin's status is copied
// back. Flotilla's controllers see only their own kinds, so a peer object places, overrides and is counted
// exactly as its twin, and deleting it deletes the twin through the garbage collector, releasing what the
// twin held.
//
// Mirroring rather than serving by conversion: a conversion webhook converts between versions of one group,
// never between groups, and the two kinds must also differ where the peer's defaults differ from Flotilla's
// (Karmada's failover), or where their shapes differ (OCM's add-on kinds: Kind.Spec and Kind.Status convert).
// An OCM ManagedClusterAddOn lives in a namespace named after its cluster and its twin in the cluster's
// Flotilla namespace: owner references do not cross namespaces, so such a twin is marked with
// AnnotationPeer and the peer object holds Finalizer until it has deleted its twin.
package mirror

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Kind pairs a peer kind with the Flotilla kind its objects are mirrored onto.
type Kind struct {
	Peer, Twin schema.GroupVersionKind
	// Spec is the twin's spec for a peer object, reading what the object names through r; nil: a copy of
	// the peer's spec. An error made with refuse is the object's fault: it is told in an event, not retried.
	Spec func(ctx context.Context, r client.Reader, peer *unstructured.Unstructured) (map[string]any, error)
	// Status is the peer's status for its twin's; nil: a copy.
	Status func(twin map[string]any) (map[string]any, error)
	// TwinNamespace is the namespace of the twin of a peer object in namespace ns; nil: ns. A twin in
	// another namespace is marked with AnnotationPeer instead of an owner reference.
	TwinNamespace func(ns string) string
	// Labels are added to the twin's (the peer's labels).
	Labels func(peer client.Object) map[string]string
	// Finalizers are given to a new twin: those the controllers that act on it expect of its writer.
	Finalizers []string
	// Follows are other peer kinds whose objects the twin's spec is made of: a change of one mirrors again
	// the peer objects Follow.Peers names.
	Follows []Follow
	// Content are the top-level fields that hold a kind's content, for a kind without a spec (Karmada's
	// ResourceInterpreterWebhookConfiguration holds its webhooks at the top, as Kubernetes' webhook
	// configurations do); the twin's are a copy of the peer's, and the kind has no status. nil: spec.
	Content []string
}

// Follow is a kind a Kind's twins are made of, and which peer objects read an object of it.
type Follow struct {
	Kind  schema.GroupVersionKind
	Peers func(ctx context.Context, r client.Reader, obj client.Object) []reconcile.Request
}

// refusal is an error in a peer object's content: mirroring it again does not help until it changes.
type refusal struct{ error }

// refuse makes a refusal.
func refuse(format string, args ...any) error { return refusal{fmt.Errorf(format, args...)} }

// AnnotationPeer marks a twin that lives in another namespace than its peer object with the peer's
// GROUP/KIND/NAMESPACE/NAME.
const AnnotationPeer = "mirror.flotilla.io/peer"

// Finalizer is held by a peer object whose twin lives in another namespace, until it has deleted its twin.
const Finalizer = "mirror.flotilla.io/twin"

// Event reasons on the peer object.
const (
	// ReasonNameTaken: a Flotilla object of the twin's kind and name exists that the peer object does not own.
	ReasonNameTaken = "MirrorNameTaken"
	// ReasonMirrorFailed: the twin could not be written; the message says why.
	ReasonMirrorFailed = "MirrorFailed"
)

// Mirror keeps the twins of one peer kind.
type Mirror struct {
	Kind     Kind
	Client   client.Client
	Scheme   *runtime.Scheme
	Recorder events.EventRecorder
}

// Setup registers a mirror for each kind with the manager, named PREFIX-KIND (lower case).
func Setup(mgr ctrl.Manager, prefix string, kinds []Kind) error {
	for _, k := range kinds {
		twin, err := mgr.GetScheme().New(k.Twin)
		if err != nil {
			return fmt.Errorf("mirror of %s: %w", k.Peer.Kind, err)
		}
		m := &Mirror{Kind: k, Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder("flotilla-mirror")}
		b := ctrl.NewControllerManagedBy(mgr).Named(prefix + "-" + strings.ToLower(k.Peer.Kind)).For(m.peer())
		if k.TwinNamespace == nil {
			b = b.Owns(twin.(client.Object))
		} else {
			b = b.Watches(twin.(client.Object), handler.EnqueueRequestsFromMapFunc(m.peerOfTwin))
		}
		for _, f := range k.Follows {
			followed := &unstructured.Unstructured{}
			followed.SetGroupVersionKind(f.Kind)
			peers := f.Peers
			b = b.Watches(followed, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
				return peers(ctx, mgr.GetClient(), o)
			}))
		}
		if err := b.Complete(m); err != nil {
			return err
		}
	}
	return nil
}

// peerOfTwin is the peer object a twin in another namespace is marked with.
func (m *Mirror) peerOfTwin(_ context.Context, twin client.Object) []reconcile.Request {
	ns, name, ok := m.parsePeerMark(twin.GetAnnotations()[AnnotationPeer])
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}

// peerMark is what AnnotationPeer says on the twin of peer.
func (m *Mirror) peerMark(peer client.Object) string {
	return m.Kind.Peer.Group + "/" + m.Kind.Peer.Kind + "/" + peer.GetNamespace() + "/" + peer.GetName()
}

// parsePeerMark reads an AnnotationPeer of this mirror's kind.
func (m *Mirror) parsePeerMark(mark string) (ns, name string, ok bool) {
	rest, ok := strings.CutPrefix(mark, m.Kind.Peer.Group+"/"+m.Kind.Peer.Kind+"/")
	if !ok {
		return "", "", false
	}
	ns, name, ok = strings.Cut(rest, "/")
	return ns, name, ok && name != ""
}

// twinKey is where the peer object's twin lives.
func (m *Mirror) twinKey(peer client.Object) client.ObjectKey {
	key := client.ObjectKeyFromObject(peer)
	if m.Kind.TwinNamespace != nil {
		key.Namespace = m.Kind.TwinNamespace(key.Namespace)
	}
	return key
}

// owns says whether twin is peer's.
func (m *Mirror) owns(peer, twin client.Object) bool {
	if m.Kind.TwinNamespace != nil {
		return twin.GetAnnotations()[AnnotationPeer] == m.peerMark(peer)
	}
	return metav1.IsControlledBy(twin, peer)
}

// peer is an empty object of the peer kind.
func (m *Mirror) peer() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(m.Kind.Peer)
	return u
}

// Reconcile creates or updates the peer object's twin from its spec, and copies the twin's status back.
func (m *Mirror) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	peer := m.peer()
	if err := m.Client.Get(ctx, req.NamespacedName, peer); err != nil {
		// Gone: the garbage collector deletes an owned twin; one in another namespace went before its
		// finalizer was released.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if peer.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, m.release(ctx, peer)
	}
	if m.Kind.TwinNamespace != nil && controllerutil.AddFinalizer(peer, Finalizer) {
		if err := m.Client.Update(ctx, peer); err != nil {
			return ctrl.Result{}, err
		}
	}
	want, err := m.twinSpec(ctx, peer)
	if refused := (refusal{}); errors.As(err, &refused) {
		m.Recorder.Eventf(peer, nil, "Warning", ReasonMirrorFailed, "Mirror", "%v", refused.error)
		return ctrl.Result{}, nil // the spec does not change by retrying
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	twin, err := m.newTwin()
	if err != nil {
		return ctrl.Result{}, err
	}
	err = m.Client.Get(ctx, m.twinKey(peer), twin)
	switch {
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, m.create(ctx, peer, want)
	case err != nil:
		return ctrl.Result{}, err
	case !m.owns(peer, twin):
		m.Recorder.Eventf(peer, nil, "Warning", ReasonNameTaken, "Mirror",
			"%s %s exists and is not this object's: it is not mirrored until one of them is renamed or deleted", m.Kind.Twin.Kind, describe(twin))
		return ctrl.Result{}, nil
	}
	current, err := runtime.DefaultUnstructuredConverter.ToUnstructured(twin)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !equality.Semantic.DeepEqual(m.content(current), want) {
		m.setContent(current, want)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(current, twin); err != nil {
			return ctrl.Result{}, err
		}
		if err := m.Client.Update(ctx, twin); err != nil {
			return ctrl.Result{}, err
		}
	}
	status, has := current["status"].(map[string]any)
	if !has {
		return ctrl.Result{}, nil
	}
	if m.Kind.Status != nil {
		if status, err = m.Kind.Status(status); err != nil {
			return ctrl.Result{}, err
		}
	}
	if equality.Semantic.DeepEqual(peer.Object["status"], any(status)) {
		return ctrl.Result{}, nil
	}
	peer.Object["status"] = status
	return ctrl.Result{}, m.Client.Status().Update(ctx, peer)
}

// release deletes the twin of a peer object being deleted that lives in another namespace, then lets the
// peer object go. (An owned twin is the garbage collector's.)
func (m *Mirror) release(ctx context.Context, peer *unstructured.Unstructured) error {
	if m.Kind.TwinNamespace == nil || !controllerutil.ContainsFinalizer(peer, Finalizer) {
		return nil
	}
	twin, err := m.newTwin()
	if err != nil {
		return err
	}
	err = m.Client.Get(ctx, m.twinKey(peer), twin)
	switch {
	case err == nil && m.owns(peer, twin):
		// Preconditions: a twin replaced meanwhile by an object of the same name that is not ours stays.
		uid, rv := twin.GetUID(), twin.GetResourceVersion()
		err = m.Client.Delete(ctx, twin, client.Preconditions{UID: &uid, ResourceVersion: &rv})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	controllerutil.RemoveFinalizer(peer, Finalizer)
	return m.Client.Update(ctx, peer)
}

// newTwin is an empty object of the twin kind.
func (m *Mirror) newTwin() (client.Object, error) {
	o, err := m.Scheme.New(m.Kind.Twin)
	if err != nil {
		return nil, err
	}
	return o.(client.Object), nil
}

// twinSpec is the peer object's spec as its twin's: Kind.Spec's, or a copy; written as the twin's type
// writes it, so that it compares equal with the twin read back.
func (m *Mirror) twinSpec(ctx context.Context, peer *unstructured.Unstructured) (map[string]any, error) {
	if m.Kind.Spec != nil {
		return m.Kind.Spec(ctx, m.Client, peer)
	}
	if m.Kind.Content != nil {
		return m.content(peer.Object).(map[string]any), nil
	}
	return copySpec(peer)
}

// content is what an object of the kind holds: its spec, or its Content fields (a map of those it has).
func (m *Mirror) content(obj map[string]any) any {
	if m.Kind.Content == nil {
		return obj["spec"]
	}
	out := map[string]any{}
	for _, f := range m.Kind.Content {
		if v, ok := obj[f]; ok {
			out[f] = runtime.DeepCopyJSONValue(v)
		}
	}
	return out
}

// setContent writes content (content's result) into obj.
func (m *Mirror) setContent(obj map[string]any, content map[string]any) {
	if m.Kind.Content == nil {
		obj["spec"] = content
		return
	}
	for _, f := range m.Kind.Content {
		if v, ok := content[f]; ok {
			obj[f] = v
		} else {
			delete(obj, f)
		}
	}
}

// copySpec is a copy of the peer object's spec.
func copySpec(peer *unstructured.Unstructured) (map[string]any, error) {
	spec, _, err := unstructured.NestedMap(peer.Object, "spec")
	if err != nil {
		return nil, refuse("spec: %w", err)
	}
	if spec == nil {
		spec = map[string]any{}
	}
	return spec, nil
}

// adapted is a Kind.Spec: a copy of the peer object's spec, changed by adapt where the peer's semantics
// differ from Flotilla's defaults.
func adapted(adapt func(spec map[string]any) error) func(context.Context, client.Reader, *unstructured.Unstructured) (map[string]any, error) {
	return func(_ context.Context, _ client.Reader, peer *unstructured.Unstructured) (map[string]any, error) {
		spec, err := copySpec(peer)
		if err != nil {
			return nil, err
		}
		if err := adapt(spec); err != nil {
			return nil, refuse("%w", err)
		}
		return spec, nil
	}
}

// create writes the twin of peer with spec, owned by peer (or marked, in another namespace): its labels and
// annotations are the peer's, except Flotilla's own (userLabels).
func (m *Mirror) create(ctx context.Context, peer *unstructured.Unstructured, spec map[string]any) error {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	m.setContent(u.Object, spec)
	u.SetGroupVersionKind(m.Kind.Twin)
	key := m.twinKey(peer)
	u.SetName(key.Name)
	u.SetNamespace(key.Namespace)
	labels := userLabels(peer.GetLabels())
	if m.Kind.Labels != nil {
		maps.Copy(labels, m.Kind.Labels(peer))
	}
	u.SetLabels(labels)
	annotations := userLabels(peer.GetAnnotations())
	delete(annotations, "kubectl.kubernetes.io/last-applied-configuration")
	if m.Kind.TwinNamespace != nil {
		annotations[AnnotationPeer] = m.peerMark(peer)
	}
	u.SetAnnotations(annotations)
	u.SetFinalizers(m.Kind.Finalizers)
	twin, err := m.newTwin()
	if err != nil {
		return err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, twin); err != nil {
		return err
	}
	if m.Kind.TwinNamespace == nil {
		if err := controllerutil.SetControllerReference(peer, twin, m.Scheme); err != nil {
			return err
		}
	}
	err = m.Client.Create(ctx, twin)
	if apierrors.IsNotFound(err) && twin.GetNamespace() != peer.GetNamespace() {
		// The twin's namespace is a cluster's: retried, as the cluster may be joining.
		m.Recorder.Eventf(peer, nil, "Warning", ReasonMirrorFailed, "Mirror", "%s %s not created: namespace %s not found (is the cluster joined?)", m.Kind.Twin.Kind, describe(twin), twin.GetNamespace())
		return err
	}
	if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
		// Admission refused the twin: the peer object says why, as its own refusal would have.
		m.Recorder.Eventf(peer, nil, "Warning", ReasonMirrorFailed, "Mirror", "%s %s refused: %v", m.Kind.Twin.Kind, describe(twin), err)
		return nil
	}
	return err
}

// userLabels is a copy of a peer object's labels or annotations without the keys of Flotilla's domains
// (flotilla.io and its subdomains): those are the hub's to set, and on a twin they would tell Flotilla's
// controllers something the hub never decided (a Work's binding, a peer mark).
func userLabels(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		domain, _, prefixed := strings.Cut(k, "/")
		if prefixed && (domain == "flotilla.io" || strings.HasSuffix(domain, ".flotilla.io")) {
			continue
		}
		out[k] = v
	}
	return out
}

// describe is NAMESPACE/NAME, or NAME for a cluster-scoped object.
func describe(o client.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
