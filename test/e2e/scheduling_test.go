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
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// changeLabels changes a cluster's labels on the hub.
func changeLabels(t *testing.T, hub *framework.Cluster, cluster string, change func(labels map[string]string)) {
	t.Helper()
	update(t, hub, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}, func(c *clusterv1alpha1.Cluster) {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		change(c.Labels)
	})
}

// TestRenamedWeightLabelDeletesNothing divides a Deployment over m1 and m2 by a static weight list keyed by
// a label only m1 carries, so m1 runs every replica; then renames that label: the weights select no cluster
// any more, and the replicas are shared equally instead of placed nowhere. m1 never loses its copy. (The
// label is on one cluster because renaming it cluster by cluster passes through states where the list still
// selects some clusters, and then it keeps its meaning: the others get no replicas.)
func TestRenamedWeightLabelDeletesNothing(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	t.Cleanup(func() {
		changeLabels(t, f.hub, "m1", func(l map[string]string) { delete(l, "tier"); delete(l, "class") })
	})
	changeLabels(t, f.hub, "m1", func(l map[string]string) { l["tier"] = "gold" })
	gold := policyv1alpha1.StaticClusterWeight{Weight: 1, TargetCluster: policyv1alpha1.ClusterAffinity{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}}}
	placement := placementOn("m1", "m2")
	placement.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided, ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionWeighted,
		WeightPreference: &policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{gold}},
	}
	f.createDeployment(t, deployment(f.ns, "web", 4))
	f.createPolicy(t, "web", deploymentSelector("web"), placement)
	waitPlaced(t, f.ns, "web", map[*framework.Cluster]int32{f.m1: 4, f.m2: -1})
	_, before, err := replicasIn(ctx, f.m1, f.ns, "web")
	if err != nil || before == nil {
		t.Fatalf("m1: %v", err)
	}

	changeLabels(t, f.hub, "m1", func(l map[string]string) {
		l["class"] = l["tier"]
		delete(l, "tier")
	})
	testenv.Eventually(t, 2*time.Minute, "the binding falls back to equal weights", func() error {
		rb := &workv1alpha1.ResourceBinding{}
		if err := f.hub.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "web-deployment"}, rb); err != nil {
			return err
		}
		if len(rb.Spec.Clusters) == 0 {
			t.Fatalf("the binding's placement was emptied: %+v", rb.Status.Conditions)
		}
		cond := meta.FindStatusCondition(rb.Status.Conditions, workv1alpha1.ConditionScheduled)
		if cond == nil || cond.Status != metav1.ConditionTrue || !strings.Contains(cond.Message, "divided equally") {
			return fmt.Errorf("Scheduled: %+v", cond)
		}
		return nil
	})
	waitPlaced(t, f.ns, "web", map[*framework.Cluster]int32{f.m1: 2, f.m2: 2})
	if _, after, err := replicasIn(ctx, f.m1, f.ns, "web"); err != nil || after == nil || after.UID != before.UID {
		t.Fatalf("m1's Deployment was deleted or replaced (%v)", err)
	}
}
