package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestPolicyEditMovesWorkloadWithoutGap: editing a policy from m1 to m2 moves a 2-replica Deployment
// gracefully: m1's copy stays until m2's is Available, so the members together never run fewer than 2
// available replicas, and m1's copy is removed in the end. (A move used to delete m1's copy within 0.2 s.)
func TestPolicyEditMovesWorkloadWithoutGap(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	d := deployment(f.ns, "mover", 2)
	// A new copy is Available only 3 s after its pods are ready, so that a copy removed before its
	// replacement is Available leaves a gap wider than the sampling period.
	d.Spec.MinReadySeconds = 3
	f.createDeployment(t, d)
	f.createPolicy(t, "mover", deploymentSelector("mover"), placementOn("m1"))
	waitPlaced(t, f.ns, "mover", map[*framework.Cluster]int32{f.m1: 2, f.m2: -1})

	changePolicy(t, f.hub, f.ns, "mover", func(p *policyv1alpha1.PropagationPolicy) { p.Spec.Placement = placementOn("m2") })
	watchAvailability(t, f.ns, "mover", 2, []*framework.Cluster{f.m1, f.m2}, time.Minute, "the workload leaves m1 for m2", func() error {
		if replicas, _, err := replicasIn(ctx, f.m1, f.ns, "mover"); err != nil || replicas != -1 {
			return fmt.Errorf("m1 still runs its copy (%v)", err)
		}
		return nil
	})
	waitPlaced(t, f.ns, "mover", map[*framework.Cluster]int32{f.m1: -1, f.m2: 2})
}

// watchAvailability samples the Deployment's available replicas in the members every 200 ms until done says
// the move is over (or fails the test after timeout), and fails the test at the first sample where together they are fewer than floor. The
// members are read in the order given, the clusters being left first: a copy removed between two reads
// after its replacement became available is then never counted as missing. Only live members may be
// sampled; a frozen one would hold each read until it times out.
func watchAvailability(t *testing.T, namespace, name string, floor int32, members []*framework.Cluster, timeout time.Duration, what string, done func() error) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	for samples := 1; ; samples++ {
		var total int32
		var seen []string
		for _, m := range members {
			_, d, err := replicasIn(ctx, m, namespace, name)
			if err != nil {
				t.Fatalf("%s: reading %s: %v", what, m.Name, err)
			}
			available := int32(0)
			if d != nil {
				available = d.Status.AvailableReplicas
			}
			total += available
			seen = append(seen, fmt.Sprintf("%s %d", m.Name, available))
		}
		if total < floor {
			t.Fatalf("%s: availability gap at sample %d: %s available, fewer than %d", what, samples, strings.Join(seen, " + "), floor)
		}
		err := done()
		if err == nil {
			t.Logf("%s: %d samples, never fewer than %d available", what, samples, floor)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not over after %s (%s available): %v", what, timeout, strings.Join(seen, " + "), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestPurgeModesOfAMove: the policy's cluster purge mode decides what happens to the copy a move leaves.
// Never: the binding keeps an eviction task a person ends, and the old copy stays after the new placement is
// healthy. Directly: no task, and the old copy goes at once.
func TestPurgeModesOfAMove(t *testing.T) {
	for _, tt := range []struct {
		purge    policyv1alpha1.PurgeMode
		wantTask bool
		m1       int32
	}{
		{policyv1alpha1.PurgeNever, true, 1},
		{policyv1alpha1.PurgeDirectly, false, -1},
	} {
		t.Run(string(tt.purge), func(t *testing.T) {
			ctx := context.Background()
			f := useFleet(t)
			f.createDeployment(t, deployment(f.ns, "moved", 1))
			f.createPolicy(t, "moved", deploymentSelector("moved"), placementOn("m1"), func(p *policyv1alpha1.PropagationPolicy) {
				p.Spec.Failover = &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: tt.purge}}
			})
			waitPlaced(t, f.ns, "moved", map[*framework.Cluster]int32{f.m1: 1, f.m2: -1})

			changePolicy(t, f.hub, f.ns, "moved", func(p *policyv1alpha1.PropagationPolicy) { p.Spec.Placement = placementOn("m2") })
			testenv.Eventually(t, time.Minute, "the binding is Healthy on m2 alone", func() error {
				rb := &workv1alpha1.ResourceBinding{}
				if err := f.hub.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "moved-deployment"}, rb); err != nil {
					return err
				}
				if len(rb.Spec.Clusters) != 1 || rb.Spec.Clusters[0].Name != "m2" {
					return fmt.Errorf("placed on %+v", rb.Spec.Clusters)
				}
				// The scheduler writes the placement and the eviction tasks together.
				if task := evictionTask(rb, "m1"); (task != nil) != tt.wantTask || (task != nil && task.PurgeMode != tt.purge) {
					t.Fatalf("the eviction task for m1 is %+v; want one: %v", task, tt.wantTask)
				}
				if c := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha1.ConditionHealthy); c == nil || c.Status != metav1.ConditionTrue ||
					c.ObservedGeneration != rb.Generation {
					return fmt.Errorf("Healthy: %+v at generation %d", c, rb.Generation)
				}
				return nil
			})
			waitPlaced(t, f.ns, "moved", map[*framework.Cluster]int32{f.m1: tt.m1, f.m2: 1})
		})
	}
}
