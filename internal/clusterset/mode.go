package clusterset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// The hub's mode is recorded in a ConfigMap in flotilla-system, not in a flag alone: every hub process and
// the scheduler read the same record (live, from the controllers' cache), it survives restarts and upgrades
// (a new hub writes RequireBindings once, an upgraded hub Open once, and neither is rewritten unless the
// administrator asks), the administrator switches it with `flotilla hub --clusterset-mode` or `kubectl
// patch` without restarting anything, and a ConfigMap needs no new API type or version. Only the hub's
// administrator may write flotilla-system.
const (
	// ModeConfigMap names the record, in clusterv1alpha1.SystemNamespace.
	ModeConfigMap = "flotilla-clusterset-mode"
	// ModeKey is the record's key holding the Mode.
	ModeKey = "mode"
)

// ModeObject is the record of mode, as the hub writes it.
func ModeObject(mode Mode) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ModeConfigMap, Namespace: clusterv1alpha1.SystemNamespace},
		Data:       map[string]string{ModeKey: string(mode)},
	}
}

// ReadMode reads the hub's mode from its record. A missing record or a value that is not a mode is an
// error: the hub writes the record before its controllers start, so a missing one says something is wrong,
// and reading it as either mode would place (Open) or stop placing (RequireBindings) on a guess.
func ReadMode(ctx context.Context, r client.Reader) (Mode, error) {
	cm := &corev1.ConfigMap{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.SystemNamespace, Name: ModeConfigMap}, cm); err != nil {
		return "", fmt.Errorf("reading the hub's cluster-set mode (ConfigMap %s/%s): %w", clusterv1alpha1.SystemNamespace, ModeConfigMap, err)
	}
	mode := Mode(cm.Data[ModeKey])
	if err := mode.Validate(); err != nil {
		return "", fmt.Errorf("ConfigMap %s/%s, key %s: %w", clusterv1alpha1.SystemNamespace, ModeConfigMap, ModeKey, err)
	}
	return mode, nil
}

// RecordMode writes the hub's mode at start and returns it. want, when set (--clusterset-mode), is written
// whatever the record says. Without it, a record already there stays as it is; a hub without one records
// RequireBindings when it is new and Open when it holds Clusters, policies or bindings from before cluster
// sets existed, so that an upgrade does not stop its namespaces placing until the administrator switches.
func RecordMode(ctx context.Context, c client.Client, want Mode) (Mode, error) {
	current, err := ReadMode(ctx, c)
	switch {
	case err == nil && (want == "" || want == current):
		return current, nil
	case err != nil && !apierrors.IsNotFound(err) && want == "":
		return "", err // an unreadable or invalid record is not replaced on a guess
	}
	mode := want
	if mode == "" {
		upgraded, err := heldBefore(ctx, c)
		if err != nil {
			return "", err
		}
		mode = RequireBindings
		if upgraded {
			mode = Open
		}
	}
	record := ModeObject(mode)
	err = c.Create(ctx, record)
	if apierrors.IsAlreadyExists(err) {
		patch := fmt.Sprintf(`{"data":{%q:%q}}`, ModeKey, mode)
		err = c.Patch(ctx, record, client.RawPatch(types.MergePatchType, []byte(patch)))
	}
	if err != nil {
		return "", fmt.Errorf("recording the hub's cluster-set mode: %w", err)
	}
	return mode, nil
}

// heldBefore reports whether the hub holds objects from before it recorded a mode: a Cluster, a policy or a
// binding.
func heldBefore(ctx context.Context, c client.Reader) (bool, error) {
	for _, list := range []client.ObjectList{&clusterv1alpha1.ClusterList{}, &policyv1alpha1.PropagationPolicyList{},
		&policyv1alpha1.ClusterPropagationPolicyList{}, &workv1alpha1.ResourceBindingList{}, &workv1alpha1.ClusterResourceBindingList{}} {
		if err := c.List(ctx, list, client.Limit(1)); err != nil {
			return false, fmt.Errorf("looking for objects from before cluster sets: %w", err)
		}
		if meta.LenList(list) > 0 {
			return true, nil
		}
	}
	return false, nil
}
