package hollow

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/registration"
)

// Every hollow cluster carries the label LabelKey=LabelValue, which its join token grants: a policy selects
// them all by it.
const (
	LabelKey   = "bench"
	LabelValue = "hollow"
)

// ClusterName is the name of the i-th hollow cluster JoinAll joins (from 0).
func ClusterName(i int) string { return fmt.Sprintf("hollow-%04d", i) }

// Access is what hollow agents need to join a hub.
type Access struct {
	URL, Token string
	CAHashes   []string
}

// NewAccess makes a join token for purpose, valid for ttl and granting the hollow label, on the hub that
// admin and cfg reach as its admin.
func NewAccess(ctx context.Context, admin kubernetes.Interface, cfg *rest.Config, ttl time.Duration, purpose string) (Access, error) {
	token, err := registration.CreateToken(ctx, admin, ttl, purpose, registration.Grant{Labels: map[string]string{LabelKey: LabelValue}})
	if err != nil {
		return Access{}, err
	}
	hashes, err := registration.CAHashes(cfg.CAData)
	if err != nil {
		return Access{}, err
	}
	return Access{URL: cfg.Host, Token: token.String(), CAHashes: hashes}, nil
}

// JoinAll joins n hollow agents named ClusterName(0...n-1), a few at a time, and starts them.
func JoinAll(ctx context.Context, hub Access, dir string, n int, progress func(string)) ([]*Agent, error) {
	const parallel = 32
	kinds := NewKinds()
	agents := make([]*Agent, n)
	errs := make([]error, n)
	slots := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	joined := 0
	for i := range n {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			a, err := Join(ctx, hub, dir, ClusterName(i), kinds)
			if err == nil {
				err = a.Start(ctx)
			}
			agents[i], errs[i] = a, err
			mu.Lock()
			defer mu.Unlock()
			if joined++; joined%100 == 0 {
				progress(fmt.Sprintf("%d/%d clusters joined", joined, n))
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return agents, nil
}

// WaitReady waits up to two minutes until the Cluster name is Ready.
func WaitReady(ctx context.Context, c client.Client, name string) error {
	return wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		cluster := &clusterv1alpha1.Cluster{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, cluster); err != nil {
			return false, nil
		}
		return meta.IsStatusConditionTrue(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady), nil
	})
}

// WaitAllReady waits up to five minutes until at least n Clusters are Ready.
func WaitAllReady(ctx context.Context, admin client.Client, n int) error {
	ready := 0
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		clusters := &clusterv1alpha1.ClusterList{}
		if err := admin.List(ctx, clusters); err != nil {
			return false, err
		}
		ready = 0
		for _, c := range clusters.Items {
			if meta.IsStatusConditionTrue(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady) {
				ready++
			}
		}
		return ready >= n, nil
	})
	if err != nil && ctx.Err() == nil && wait.Interrupted(err) {
		return fmt.Errorf("only %d of %d clusters Ready after 5 minutes", ready, n)
	}
	return err
}
