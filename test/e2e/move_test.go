package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestPolicyEditMovesWorkloadWithoutGap: editing a policy from m1 to m2 moves a 2-replica Deployment
// gracefully: m1's copy stays until m2's is Available, so the members together never run fewer than 2
// available replicas, and m1's copy is removed in the end. (A move used to delete m1's copy within 0.2 s.)
func TestPolicyEditMovesWorkloadWithoutGap(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	f.createDeployment(t, deployment(f.ns, "mover", 2))
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
