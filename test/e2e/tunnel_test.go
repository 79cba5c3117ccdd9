package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestTunnelSurvivesRestarts: a pull member, which the hub holds no credential for, is reached through the
// hub's proxy over its agent's tunnel; after the hub restarts, and again after the agent restarts, the tunnel
// opens again, TunnelConnected turns False then True again, and the proxy works again. The hub and the agent
// restart, so the test has a fleet of its own.
func TestTunnelSurvivesRestarts(t *testing.T) {
	ctx := context.Background()
	hub := framework.StartHub(t)
	m1 := framework.StartMember(t, "m1")
	framework.JoinPull(t, hub, m1)
	framework.WaitClustersReady(t, hub, "m1")

	want, err := m1.Kube.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	throughHub := func() error {
		cfg := rest.CopyConfig(hub.Config)
		cfg.Host = strings.TrimSuffix(cfg.Host, "/") + proxyv1alpha1.ClusterProxyPath("m1")
		got, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.UID != want.UID {
			return fmt.Errorf("the proxy for m1 reached a cluster whose kube-system is %s, not m1's %s", got.UID, want.UID)
		}
		return nil
	}
	connected := waitTunnel(t, hub, metav1.ConditionTrue, time.Time{})
	testenv.Eventually(t, 30*time.Second, "m1 through the hub", throughHub)
	if out := hub.Flotilla("get", "clusters", "-o", "wide"); !strings.Contains(out, "TUNNEL") || tunnelColumn(out, "m1") != "True" {
		t.Fatalf("get clusters -o wide does not show m1's tunnel connected:\n%s", out)
	}

	afterSecondOf(connected)
	hub.Restart()
	// The restarted hub has no tunnel until the agent dials again: the condition changed since.
	connected = waitTunnel(t, hub, metav1.ConditionTrue, connected)
	testenv.Eventually(t, 30*time.Second, "m1 through the restarted hub", throughHub)

	afterSecondOf(connected)
	m1.RestartAgent()
	waitTunnel(t, hub, metav1.ConditionTrue, connected)
	testenv.Eventually(t, 30*time.Second, "m1 through the restarted agent's tunnel", throughHub)
}

// waitTunnel waits until m1's TunnelConnected has status and last changed after since, and returns when.
func waitTunnel(t *testing.T, hub *framework.Cluster, status metav1.ConditionStatus, since time.Time) time.Time {
	t.Helper()
	var at time.Time
	testenv.Eventually(t, time.Minute, "m1's TunnelConnected="+string(status), func() error {
		c := &clusterv1alpha1.Cluster{}
		if err := hub.Client.Get(context.Background(), client.ObjectKey{Name: "m1"}, c); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1alpha1.ClusterConditionTunnelConnected)
		if cond == nil || cond.Status != status || !cond.LastTransitionTime.After(since) {
			return fmt.Errorf("TunnelConnected %v", cond)
		}
		at = cond.LastTransitionTime.Time
		return nil
	})
	return at
}

// afterSecondOf waits until the clock is past the second of t. A condition's lastTransitionTime is kept to
// the second, so a restart in the second of the last transition could flip the condition twice and leave the
// same time, and waitTunnel could not tell it flipped.
func afterSecondOf(t time.Time) {
	time.Sleep(time.Until(t.Truncate(time.Second).Add(time.Second + 10*time.Millisecond)))
}

// tunnelColumn returns the TUNNEL cell of cluster's row in `get clusters -o wide`: the one after LAST-SEEN
// ("5s ago").
func tunnelColumn(out, cluster string) string {
	for _, l := range strings.Split(out, "\n") {
		fields := strings.Fields(l)
		if len(fields) == 0 || fields[0] != cluster {
			continue
		}
		for i, f := range fields[:len(fields)-1] {
			if f == "ago" {
				return fields[i+1]
			}
		}
	}
	return ""
}
