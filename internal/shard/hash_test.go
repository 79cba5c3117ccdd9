package shard

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func clusterNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("cluster-%04d", i)
	}
	return names
}

// TestOwnerSpreadsEvenly: 2,000 clusters over 2, 3 and 4 members land within 15% of an even share each.
func TestOwnerSpreadsEvenly(t *testing.T) {
	clusters := clusterNames(2000)
	for _, n := range []int{2, 3, 4} {
		members := make([]string, n)
		for i := range members {
			members[i] = fmt.Sprintf("hub-%d_%08x", i, i*7919)
		}
		count := map[string]int{}
		for _, c := range clusters {
			count[Owner(c, members)]++
		}
		even := float64(len(clusters)) / float64(n)
		for _, m := range members {
			if d := math.Abs(float64(count[m])-even) / even; d > 0.15 {
				t.Errorf("%d members: %s owns %d clusters, %.0f%% off an even %.0f", n, m, count[m], 100*d, even)
			}
		}
	}
}

// TestOwnerMovesOnlyWhatMust: a member joining takes clusters only from the others, into itself; a member
// leaving hands over only its own clusters. Nothing else changes owner.
func TestOwnerMovesOnlyWhatMust(t *testing.T) {
	clusters := clusterNames(1000)
	three := []string{"a", "b", "c"}
	four := []string{"a", "b", "c", "d"}
	moved := 0
	for _, c := range clusters {
		before, after := Owner(c, three), Owner(c, four)
		if before != after {
			moved++
			if after != "d" {
				t.Fatalf("%s moved from %s to %s when d joined", c, before, after)
			}
		}
		// d leaving again: back to where it was.
		if Owner(c, three) != before {
			t.Fatalf("%s: owner not stable", c)
		}
	}
	if moved < 150 || moved > 350 {
		t.Errorf("d joining moved %d of 1000 clusters, want about a quarter", moved)
	}
}

// TestOwnerIgnoresOrder: the owner depends on the set of members, not their order; no members, no owner.
func TestOwnerIgnoresOrder(t *testing.T) {
	members := []string{"x", "y", "z", "w"}
	for _, c := range clusterNames(200) {
		want := Owner(c, members)
		reversed := slices.Clone(members)
		slices.Reverse(reversed)
		if got := Owner(c, reversed); got != want {
			t.Fatalf("%s: owner %s, %s reversed", c, want, got)
		}
	}
	if got := Owner("cluster-1", nil); got != "" {
		t.Errorf("no members: owner %q", got)
	}
}
