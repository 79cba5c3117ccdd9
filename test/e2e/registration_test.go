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

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// clusterHealth returns the Ready status of a cluster and its taint keys.
func clusterHealth(ctx context.Context, hub *framework.Cluster, name string) (metav1.ConditionStatus, []string, error) {
	c := &clusterv1alpha1.Cluster{}
	if err := hub.Client.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
		return "", nil, err
	}
	var taints []string
	for _, t := range c.Spec.Taints {
		taints = append(taints, t.Key+":"+string(t.Effect))
	}
	cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionReady)
	if cond == nil {
		return metav1.ConditionUnknown, taints, nil
	}
	return cond.Status, taints, nil
}

// TestClustersJoinReportAndFailHealthChecks joins two members in pull mode and one in push mode, sees all
// three Ready with real versions and node counts, freezes one member until the hub marks it Unknown and
// tainted, and resumes it until it is Ready again.
func TestClustersJoinReportAndFailHealthChecks(t *testing.T) {
	ctx := context.Background()
	hub := framework.StartHub(t, "--cluster-grace-period", "20s")
	m1 := framework.StartMember(t, "m1", "--nodes", "2")
	m2 := framework.StartMember(t, "m2", "--nodes", "3")
	m3 := framework.StartMember(t, "m3", "--nodes", "1")
	// m1's agent gets certificates of the shortest lifetime the signer grants and renews each ten seconds in.
	agent1 := framework.JoinPull(t, hub, m1, "--labels", "env=prod", "--region", "eu-west-1", "--cert-ttl", "10m", "--renew-before", "9m50s")
	framework.JoinPull(t, hub, m2)
	framework.JoinPush(t, hub, m3)

	wantNodes := map[string]int32{"m1": 2, "m2": 3, "m3": 1}
	testenv.Eventually(t, time.Minute, "all three clusters Ready and reporting", func() error {
		for name, nodes := range wantNodes {
			c := &clusterv1alpha1.Cluster{}
			if err := hub.Client.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
				return err
			}
			ready, taints, _ := clusterHealth(ctx, hub, name)
			if ready != metav1.ConditionTrue || len(taints) != 0 {
				return fmt.Errorf("%s: Ready=%s taints=%v", name, ready, taints)
			}
			if c.Status.KubernetesVersion == "" || c.Status.NodeSummary == nil || c.Status.NodeSummary.ReadyNum != nodes {
				return fmt.Errorf("%s: version %q nodes %+v, want %d ready", name, c.Status.KubernetesVersion, c.Status.NodeSummary, nodes)
			}
		}
		return nil
	})
	table := hub.Flotilla("get", "clusters")
	for _, want := range []string{"m1", "Pull", "m3", "Push", "True", "2/2", "3/3", "1/1"} {
		if !strings.Contains(table, want) {
			t.Fatalf("flotilla get clusters does not show %q:\n%s", want, table)
		}
	}

	testenv.Eventually(t, time.Minute, "m1's agent renews its certificate by itself", func() error {
		if !strings.Contains(agent1.Output(), "hub certificate renewed") {
			return fmt.Errorf("not yet renewed")
		}
		return nil
	})

	m2.Freeze()
	testenv.Eventually(t, 2*time.Minute, "frozen m2 turns Unknown and tainted unreachable", func() error {
		ready, taints, err := clusterHealth(ctx, hub, "m2")
		if err != nil || ready != metav1.ConditionUnknown || !contains(taints, clusterv1alpha1.TaintClusterUnreachable+":NoSchedule") {
			return fmt.Errorf("Ready=%s taints=%v err=%v", ready, taints, err)
		}
		return nil
	})
	if ready, _, _ := clusterHealth(ctx, hub, "m1"); ready != metav1.ConditionTrue {
		t.Fatalf("m1 (reporting with its renewed certificate) went %s while only m2 was frozen", ready)
	}
	m2.Resume()
	testenv.Eventually(t, 2*time.Minute, "resumed m2 is Ready again, untainted", func() error {
		ready, taints, err := clusterHealth(ctx, hub, "m2")
		if err != nil || ready != metav1.ConditionTrue || len(taints) != 0 {
			return fmt.Errorf("Ready=%s taints=%v err=%v", ready, taints, err)
		}
		return nil
	})
	if out := hub.Flotilla("describe", "cluster", "m2"); !strings.Contains(out, "ClusterUnreachable") {
		t.Fatalf("describe cluster m2 shows no event for the outage:\n%s", out)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
