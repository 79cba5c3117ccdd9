package execution

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/members"
)

// SetupPush registers the hub's executor, which applies the Works of Push clusters with the credentials the
// hub stores for them, marking what it applies with hubID. Works of Pull clusters are left to their agents. A
// bounded pool of workers keeps one slow member from holding up the others.
func SetupPush(mgr ctrl.Manager, hubID string) error {
	if hubID == "" {
		return errors.New("push-execution: the hub's ID is unknown")
	}
	e := &Executor{Hub: mgr.GetClient(), FieldManager: workv1alpha1.ControllerFieldManager("push-execution"), HubID: hubID}
	// A member's clients, and the watches on what was applied, are built anew only when its credentials change.
	cache := members.NewCache(members.FromSecrets(mgr.GetAPIReader()), func(_ string, cfg *rest.Config) (*Member, error) {
		m, err := NewMember(cfg)
		if err != nil {
			return nil, err
		}
		m.WatchApplied(e.Notify)
		return m, nil
	}, (*Member).Stop)
	e.MemberFor = func(ctx context.Context, namespace string) (*Member, error) {
		name, ok := clusterv1alpha1.ClusterOfNamespace(namespace)
		if !ok {
			return nil, nil
		}
		cluster := &clusterv1alpha1.Cluster{}
		if err := e.Hub.Get(ctx, client.ObjectKey{Name: name}, cluster); err != nil || cluster.Spec.SyncMode != clusterv1alpha1.Push {
			if err == nil || apierrors.IsNotFound(err) {
				cache.Drop(name) // gone or pulled now: its objects stay as they are, unwatched
			}
			return nil, client.IgnoreNotFound(err)
		}
		return cache.Get(ctx, cluster)
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		cache.Close()
		return nil
	})); err != nil {
		return err
	}
	return e.SetupWithManager(mgr, "push-execution", controller.Options{})
}
