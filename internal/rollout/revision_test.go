package rollout

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

func deployment(image, resourceVersion string, generation int64) *unstructured.Unstructured {
	d := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "uid": "u1", "resourceVersion": resourceVersion,
			"labels": map[string]any{"app": "web"}},
		"spec":   map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": image}}}}},
		"status": map[string]any{"replicas": int64(2)},
	}}
	d.SetGeneration(generation)
	return d
}

// TestSnapshotHashesContentOnly: the hash follows the content, not the identity, status or generation, so a
// revision that comes back (an undo) is the same revision.
func TestSnapshotHashesContentOnly(t *testing.T) {
	_, a, err := Snapshot(deployment("nginx:1", "10", 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, same, _ := Snapshot(deployment("nginx:1", "99", 7), nil)
	_, other, _ := Snapshot(deployment("nginx:2", "10", 1), nil)
	if a != same || a == other || len(a) != 10 {
		t.Fatalf("hashes: %q, same content %q, other content %q", a, same, other)
	}
	claimed := deployment("nginx:1", "10", 1)
	claimed.SetLabels(map[string]string{"app": "web", policyv1alpha1.LabelPropagationPolicyName: "web"})
	if _, h, _ := Snapshot(claimed, nil); h != a {
		t.Fatalf("the detector's claim label changed the revision: %q, want %q", h, a)
	}
}

// TestApplyKeepsIdentity: a revision put on the live template keeps its identity and takes the content and
// the revision's generation.
func TestApplyKeepsIdentity(t *testing.T) {
	rev, _, _ := Snapshot(deployment("nginx:1", "10", 1), nil)
	live := deployment("nginx:2", "42", 5)
	got := rev.Apply(live)
	image, _, _ := unstructured.NestedSlice(got.Object, "spec", "template", "spec", "containers")
	if got.GetResourceVersion() != "42" || got.GetUID() != "u1" || got.GetGeneration() != 1 ||
		image[0].(map[string]any)["image"] != "nginx:1" || got.GetLabels()["app"] != "web" {
		t.Fatalf("applied: %v", got.Object)
	}
	if _, found := got.Object["status"]; found {
		t.Fatal("a revision carries no status")
	}
}

// TestApplyKeepsTheClaim: a revision put back (an undo) keeps the detector's claim labels and the annotations
// no revision holds, so the template stays claimed; and it is the same revision as the one recorded, whether
// the template had no labels but the claim's or none at all.
func TestApplyKeepsTheClaim(t *testing.T) {
	recorded := deployment("nginx:1", "10", 1)
	recorded.SetLabels(map[string]string{policyv1alpha1.LabelPropagationPolicyName: "web"})
	rev, hash, _ := Snapshot(recorded, nil)
	live := deployment("nginx:2", "42", 5)
	live.SetLabels(map[string]string{"app": "web", policyv1alpha1.LabelPropagationPolicyNamespace: "shop", policyv1alpha1.LabelPropagationPolicyName: "web"})
	live.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}", "note": "x"})
	got := rev.Apply(live)
	if l := got.GetLabels(); len(l) != 2 || l[policyv1alpha1.LabelPropagationPolicyNamespace] != "shop" || l[policyv1alpha1.LabelPropagationPolicyName] != "web" {
		t.Fatalf("labels %v, want the claim's only", l)
	}
	if a := got.GetAnnotations(); len(a) != 1 || a["kubectl.kubernetes.io/last-applied-configuration"] != "{}" {
		t.Fatalf("annotations %v, want last-applied-configuration only", a)
	}
	if _, h, _ := Snapshot(got, nil); h != hash {
		t.Fatalf("the template put back is revision %s, want %s", h, hash)
	}
	unlabelled := deployment("nginx:1", "10", 1)
	unlabelled.SetLabels(nil)
	if _, h, _ := Snapshot(unlabelled, nil); h != hash {
		t.Fatalf("no labels: revision %s, want %s (only claim labels)", h, hash)
	}
}
