package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestApplicationFailoverMovesOffAnUnhealthyCluster: a Deployment duplicated on two of the three members
// (m1 and m2) never becomes Available on m2, where an override asks for a node no member has. After the
// policy's 10 s of application failover toleration it moves off m2 to m3; m2's copy stays until m3's is
// Available, and m3's copy carries the label the policy's statePreservation took from m2's status. m1, where
// it ran well, keeps its copy without the label.
func TestApplicationFailoverMovesOffAnUnhealthyCluster(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	const label = "failover.example.io/replicas"
	f.createDeployment(t, deployment(f.ns, "flaky", 2))
	placement := placementOn("m1", "m2", "m3")
	placement.SpreadConstraints = []policyv1alpha1.SpreadConstraint{{SpreadByField: policyv1alpha1.SpreadByFieldCluster, MinGroups: 1, MaxGroups: 2}}
	f.createPolicy(t, "flaky", deploymentSelector("flaky"), placement, func(p *policyv1alpha1.PropagationPolicy) {
		p.Spec.Failover = &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
			DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To(int32(10))},
			PurgeMode:          policyv1alpha1.PurgeGracefully,
			StatePreservation: &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{
				{AliasLabelName: label, JSONPath: "{.replicas}"}}},
		}}
	})
	stuck := &policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "stuck-on-m2", Namespace: f.ns},
		Spec: policyv1alpha1.OverrideSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{deploymentSelector("flaky")},
			OverrideRules: []policyv1alpha1.RuleWithCluster{{
				TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m2"}},
				Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{Path: "/spec/template/spec/nodeSelector",
					Operator: "add", Value: &apiextensionsv1.JSON{Raw: []byte(`{"flotilla.example.io/no-such-node":"true"}`)}}}},
			}},
		},
	}
	if err := f.hub.Client.Create(ctx, stuck); err != nil {
		t.Fatal(err)
	}

	// Placed on m1 and m2 first; m2's copy never becomes Available.
	testenv.Eventually(t, 2*time.Minute, "flaky on m1 and m2", func() error {
		for _, c := range []*framework.Cluster{f.m1, f.m2} {
			if n, _, err := replicasIn(ctx, c, f.ns, "flaky"); err != nil || n != 2 {
				return fmt.Errorf("%s runs %d replicas (%v), want 2", c.Name, n, err)
			}
		}
		return nil
	})

	// It moves to m3; at no sample is m2's copy gone before m3's is Available.
	m3Available := false
	testenv.Eventually(t, 3*time.Minute, "flaky moved off m2 to m3", func() error {
		_, on3, err := replicasIn(ctx, f.m3, f.ns, "flaky")
		if err != nil {
			return err
		}
		m3Available = m3Available || (on3 != nil && on3.Status.AvailableReplicas == 2)
		n2, _, err := replicasIn(ctx, f.m2, f.ns, "flaky")
		if err != nil {
			return err
		}
		if n2 == -1 && !m3Available {
			t.Fatalf("m2's copy was removed before m3's was Available")
		}
		if n2 != -1 || !m3Available {
			return fmt.Errorf("m2 runs %d replicas, m3 Available: %v", n2, m3Available)
		}
		return nil
	})
	_, on3, err := replicasIn(ctx, f.m3, f.ns, "flaky")
	if err != nil || on3 == nil || on3.Labels[label] != "2" {
		t.Fatalf("m3's copy (%v) has labels %v, want %s=2 preserved from m2's status", err, labelsOf(on3), label)
	}
	_, on1, err := replicasIn(ctx, f.m1, f.ns, "flaky")
	if err != nil || on1 == nil || on1.Labels[label] != "" {
		t.Fatalf("m1's copy (%v) has labels %v, want it running without the preserved label", err, labelsOf(on1))
	}
	events, err := f.hub.Kube.EventsV1().Events(f.ns).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=flaky"})
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, e := range events.Items {
		notes = append(notes, e.Note)
	}
	if all := strings.Join(notes, "\n"); !strings.Contains(all, "evicting from m2: application unhealthy") || !strings.Contains(all, "removing from m2") {
		t.Errorf("events on the template:\n%s\nwant the eviction from m2 and its end", all)
	}
}

func labelsOf(d *appsv1.Deployment) map[string]string {
	if d == nil {
		return nil
	}
	return d.Labels
}
