package mirror

import (
	"maps"
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

// TestContentFields: a kind without a spec (Karmada's ResourceInterpreterWebhookConfiguration) mirrors its
// top-level content fields: copied from the peer, written onto the twin, and removed from the twin when the
// peer drops them; metadata and other fields stay the twin's.
func TestContentFields(t *testing.T) {
	m := &Mirror{Kind: Kind{Content: []string{"webhooks"}}}
	peer := map[string]any{"metadata": map[string]any{"name": "p"}, "webhooks": []any{map[string]any{"name": "a"}}}
	twin := map[string]any{"metadata": map[string]any{"name": "t"}}
	want := m.content(peer).(map[string]any)
	m.setContent(twin, want)
	if !equality.Semantic.DeepEqual(m.content(twin), m.content(peer)) || twin["metadata"].(map[string]any)["name"] != "t" {
		t.Errorf("twin %v after mirroring %v", twin, peer)
	}
	peer["webhooks"].([]any)[0].(map[string]any)["name"] = "changed"
	if twin["webhooks"].([]any)[0].(map[string]any)["name"] != "a" {
		t.Errorf("the twin shares the peer's values")
	}
	delete(peer, "webhooks")
	m.setContent(twin, m.content(peer).(map[string]any))
	if _, has := twin["webhooks"]; has {
		t.Errorf("the twin keeps webhooks the peer dropped: %v", twin)
	}
	spec := &Mirror{}
	spec.setContent(twin, map[string]any{"x": int64(1)})
	if !equality.Semantic.DeepEqual(spec.content(twin), map[string]any{"x": int64(1)}) {
		t.Errorf("a kind with a spec mirrors spec: %v", twin)
	}
}

// TestUserLabels: a peer object's labels reach its twin without the keys of Flotilla's domains, which only
// the hub sets.
func TestUserLabels(t *testing.T) {
	got := userLabels(map[string]string{
		"app": "web", "example.com/team": "a", "notflotilla.io/x": "kept",
		"work.flotilla.io/binding-name": "other", "flotilla.io/deletion-protected": "Always", "mirror.flotilla.io/peer": "x",
	})
	want := map[string]string{"app": "web", "example.com/team": "a", "notflotilla.io/x": "kept"}
	if !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
