package mirror

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"
)

// TestKarmadaFailover: a Karmada policy without spec.failover.cluster tolerates the health taints for ever
// (its own tolerations kept first); one with it, or one following a Placement, is left as it is.
func TestKarmadaFailover(t *testing.T) {
	forever := "{key: cluster.flotilla.io/unreachable, operator: Exists, effect: NoExecute}, {key: cluster.flotilla.io/not-ready, operator: Exists, effect: NoExecute}"
	for _, tt := range []struct{ name, spec, want string }{
		{"no failover", "placement: {clusterAffinity: {clusterNames: [m1]}}",
			"placement: {clusterAffinity: {clusterNames: [m1]}, clusterTolerations: [" + forever + "]}"},
		{"own tolerations kept", "placement: {clusterTolerations: [{key: team, operator: Exists}]}",
			"placement: {clusterTolerations: [{key: team, operator: Exists}, " + forever + "]}"},
		{"application failover only", "failover: {application: {decisionConditions: {tolerationSeconds: 60}}}",
			"failover: {application: {decisionConditions: {tolerationSeconds: 60}}}\nplacement: {clusterTolerations: [" + forever + "]}"},
		{"cluster failover", "failover: {cluster: {purgeMode: Directly}}", "failover: {cluster: {purgeMode: Directly}}"},
		{"placementRef", "placementRef: {name: p}", "placementRef: {name: p}"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var spec, want map[string]any
			if err := yaml.Unmarshal([]byte(tt.spec), &spec); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if err := karmadaFailover(spec); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(spec, want) {
				got, _ := yaml.Marshal(spec)
				t.Errorf("got\n%s", got)
			}
		})
	}
}
