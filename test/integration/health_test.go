package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestLivenessFollowsTheHubsClock: two clusters whose agents' clocks are an hour behind and an hour ahead
// renew their Leases. Both are Ready while they renew, and both turn Unknown once the renewals stop: the hub
// judges liveness by when it saw each Lease change, not by the renewTime an agent wrote.
func TestLivenessFollowsTheHubsClock(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	skews := map[string]time.Duration{"skew-behind": -time.Hour, "skew-ahead": time.Hour}
	for name := range skews {
		if _, err := registration.EnsureClusterObjects(ctx, env.Client, &clusterv1alpha1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull, ID: "id-" + name},
		}); err != nil {
			t.Fatal(err)
		}
		// The health monitor writes the status too: retry on its conflicts.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cluster := &clusterv1alpha1.Cluster{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, cluster); err != nil {
				return err
			}
			cluster.Status.Health = &clusterv1alpha1.HealthEndpoints{Livez: "ok", Readyz: "ok"}
			return env.Client.Status().Update(ctx, cluster)
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	renewing, stopRenewing := context.WithCancel(ctx)
	var renewers sync.WaitGroup
	for name, skew := range skews {
		renewers.Go(func() {
			tick := time.NewTicker(3 * time.Second)
			defer tick.Stop()
			for {
				lease := &coordinationv1.Lease{}
				if err := env.Client.Get(renewing, client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(name), Name: name}, lease); err == nil {
					lease.Spec.HolderIdentity = ptr.To(registration.AgentUser(name, "test"))
					lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(skew)}
					_ = env.Client.Update(renewing, lease)
				}
				select {
				case <-renewing.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
	readyIs := func(want metav1.ConditionStatus) func() error {
		return func() error {
			for name := range skews {
				c := &clusterv1alpha1.Cluster{}
				if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
					return err
				}
				if got := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady); got == nil || got.Status != want {
					return fmt.Errorf("%s: Ready = %+v, want %s", name, got, want)
				}
			}
			return nil
		}
	}
	testenv.Eventually(t, time.Minute, "both clusters Ready while they renew", readyIs(metav1.ConditionTrue))
	stopRenewing()
	renewers.Wait()
	// The grace period of the test hub is 40 s.
	testenv.Eventually(t, 90*time.Second, "both clusters Unknown once renewals stop", readyIs(metav1.ConditionUnknown))
}
