package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

func TestFleetCountsTunnelsOfPullClusters(t *testing.T) {
	cluster := func(name string, mode clusterv1alpha1.ClusterSyncMode, tunnel metav1.ConditionStatus) *clusterv1alpha1.Cluster {
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: mode}}
		if tunnel != "" {
			c.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionTunnelConnected, Status: tunnel}}
		}
		return c
	}
	reader := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(
		cluster("up", clusterv1alpha1.Pull, metav1.ConditionTrue),
		cluster("down", clusterv1alpha1.Pull, metav1.ConditionFalse),
		cluster("new", clusterv1alpha1.Pull, ""),
		cluster("push", clusterv1alpha1.Push, ""), // reached directly: no tunnel to count
	).Build()
	want := `
# HELP flotilla_tunnels Pull clusters by their TunnelConnected condition: whether the agent's tunnel to the hub, which the proxy reaches the member through, is open (Unknown: not reported yet).
# TYPE flotilla_tunnels gauge
flotilla_tunnels{connected="False"} 1
flotilla_tunnels{connected="True"} 1
flotilla_tunnels{connected="Unknown"} 1
`
	if err := testutil.CollectAndCompare(Fleet{Reader: reader}, strings.NewReader(want), "flotilla_tunnels"); err != nil {
		t.Fatal(err)
	}
}
