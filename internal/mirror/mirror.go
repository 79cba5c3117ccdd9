// Package mirror serves peer systems' APIs on the hub by mirroring: each object of a peer kind (Karmada's
// policy.karmada.io PropagationPolicy, for one) is kept as an object of its Flotilla twin (policy.flotilla.io
// PropagationPolicy) of the same name and namespace, which the peer object owns; the twin's status is copied
// back. Flotilla's controllers see only their own kinds, so a peer object places, overrides and is counted
// exactly as its twin, and deleting it deletes the twin through the garbage collector, releasing what the
// twin held.
//
// Mirroring rather than serving by conversion: a conversion webhook converts between versions of one group,
// never between groups, and the two kinds must also differ where the peer's defaults differ from Flotilla's
// (Adapt).
package mirror

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Kind pairs a peer kind with the Flotilla kind its objects are mirrored onto.
type Kind struct {
	Peer, Twin schema.GroupVersionKind
	// Adapt, when set, changes the copied spec where the peer's semantics differ from Flotilla's defaults.
	Adapt func(spec map[string]any) error
}

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
		err = ctrl.NewControllerManagedBy(mgr).Named(prefix + "-" + strings.ToLower(k.Peer.Kind)).
			For(m.peer()).
			Owns(twin.(client.Object)).
			Complete(m)
		if err != nil {
			return err
		}
	}
	return nil
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
		// Gone: the garbage collector deletes its twin.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if peer.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil
	}
	want, err := m.twinSpec(peer)
	if err != nil {
		m.Recorder.Eventf(peer, nil, "Warning", ReasonMirrorFailed, "Mirror", "%v", err)
		return ctrl.Result{}, nil // the spec does not change by retrying
	}
	twinObj, err := m.Scheme.New(m.Kind.Twin)
	if err != nil {
		return ctrl.Result{}, err
	}
	twin := twinObj.(client.Object)
	err = m.Client.Get(ctx, req.NamespacedName, twin)
	switch {
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, m.create(ctx, peer, want)
	case err != nil:
		return ctrl.Result{}, err
	case !metav1.IsControlledBy(twin, peer):
		m.Recorder.Eventf(peer, nil, "Warning", ReasonNameTaken, "Mirror",
			"%s %s exists and is not this object's: it is not mirrored until one of them is renamed or deleted", m.Kind.Twin.Kind, describe(twin))
		return ctrl.Result{}, nil
	}
	current, err := runtime.DefaultUnstructuredConverter.ToUnstructured(twin)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !equality.Semantic.DeepEqual(current["spec"], want) {
		current["spec"] = want
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(current, twin); err != nil {
			return ctrl.Result{}, err
		}
		if err := m.Client.Update(ctx, twin); err != nil {
			return ctrl.Result{}, err
		}
	}
	status, has := current["status"]
	if !has || equality.Semantic.DeepEqual(peer.Object["status"], status) {
		return ctrl.Result{}, nil
	}
	peer.Object["status"] = status
	return ctrl.Result{}, m.Client.Status().Update(ctx, peer)
}

// twinSpec is the peer object's spec as its twin's: a copy, adapted.
func (m *Mirror) twinSpec(peer *unstructured.Unstructured) (map[string]any, error) {
	spec, _, err := unstructured.NestedMap(peer.Object, "spec")
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	if spec == nil {
		spec = map[string]any{}
	}
	if m.Kind.Adapt != nil {
		if err := m.Kind.Adapt(spec); err != nil {
			return nil, err
		}
	}
	return spec, nil
}

// create writes the twin of peer with spec, owned by peer: its labels and annotations are the peer's.
func (m *Mirror) create(ctx context.Context, peer *unstructured.Unstructured, spec map[string]any) error {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(m.Kind.Twin)
	u.SetName(peer.GetName())
	u.SetNamespace(peer.GetNamespace())
	u.SetLabels(peer.GetLabels())
	annotations := peer.GetAnnotations()
	delete(annotations, "kubectl.kubernetes.io/last-applied-configuration")
	u.SetAnnotations(annotations)
	twinObj, err := m.Scheme.New(m.Kind.Twin)
	if err != nil {
		return err
	}
	twin := twinObj.(client.Object)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, twin); err != nil {
		return err
	}
	if err := controllerutil.SetControllerReference(peer, twin, m.Scheme); err != nil {
		return err
	}
	err = m.Client.Create(ctx, twin)
	if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
		// Admission refused the twin: the peer object says why, as its own refusal would have.
		m.Recorder.Eventf(peer, nil, "Warning", ReasonMirrorFailed, "Mirror", "%s %s refused: %v", m.Kind.Twin.Kind, describe(twin), err)
		return nil
	}
	return err
}

// describe is NAMESPACE/NAME, or NAME for a cluster-scoped object.
func describe(o client.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
