package binding

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func parse(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestRender(t *testing.T) {
	template := parse(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop",
		"uid":"u","resourceVersion":"9","generation":4,"creationTimestamp":"2026-01-01T00:00:00Z","managedFields":[{}],
		"labels":{"app":"web","propagationpolicy.flotilla.io/name":"p","propagationpolicy.flotilla.io/namespace":"shop"},
		"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}","team":"a"}},
		"spec":{"replicas":6,"template":{"metadata":{"creationTimestamp":null},"spec":{"containers":[{"name":"a","resources":{"limits":null}}]}}},
		"status":{"replicas":6}}`)
	m := Render(template, workv1alpha1.TargetCluster{Name: "m1", Replicas: 2}, []workv1alpha1.TargetCluster{{Name: "m1", Replicas: 2}, {Name: "m2", Replicas: 4}})
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"} {
		if _, found, _ := unstructured.NestedFieldNoCopy(m.Object, "metadata", f); found {
			t.Errorf("metadata.%s kept", f)
		}
	}
	if _, found := m.Object["status"]; found {
		t.Error("status kept")
	}
	if data, _ := m.MarshalJSON(); strings.Contains(string(data), "null") {
		t.Errorf("null fields kept (the API server drops them, so the stored Work would always differ): %s", data)
	}
	if got := m.GetLabels(); len(got) != 1 || got["app"] != "web" {
		t.Errorf("labels %v", got)
	}
	if got := m.GetAnnotations(); got["team"] != "a" || got[workv1alpha1.AnnotationTemplateGeneration] != "4" || len(got) != 2 {
		t.Errorf("annotations %v", got)
	}
	if r, _, _ := unstructured.NestedInt64(m.Object, "spec", "replicas"); r != 2 {
		t.Errorf("divided replicas %d, want 2", r)
	}
	if r, _, _ := unstructured.NestedInt64(Render(template, workv1alpha1.TargetCluster{Name: "m1", Replicas: 6}, nil).Object, "spec", "replicas"); r != 6 {
		t.Errorf("duplicated replicas %d, want 6", r)
	}
	if r, _, _ := unstructured.NestedInt64(template.Object, "spec", "replicas"); r != 6 {
		t.Error("rendering changed the template")
	}

	svc := Render(parse(t, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"clusterIP":"10.96.0.7","clusterIPs":["10.96.0.7"],"ports":[{"port":80}]}}`),
		workv1alpha1.TargetCluster{Name: "m1"}, nil)
	if _, found, _ := unstructured.NestedFieldNoCopy(svc.Object, "spec", "clusterIP"); found {
		t.Error("the hub's cluster IP went to the member")
	}
}

// TestEncodedManifestsAreStoredForm: what the API server stores and returns is the manifest's JSON decoded and
// encoded again. Unless the encoding is already that form, an unchanged Work never compares equal and is
// rewritten on every reconcile.
func TestEncodedManifestsAreStoredForm(t *testing.T) {
	template := parse(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"b"},"data":{"html":"<b>&</b>","n":"1"}}`)
	manifests, err := encodeManifests([]*unstructured.Unstructured{Render(template, workv1alpha1.TargetCluster{Name: "m1"}, nil)})
	if err != nil {
		t.Fatal(err)
	}
	var decoded any
	if err := json.Unmarshal(manifests[0].Raw, &decoded); err != nil {
		t.Fatal(err)
	}
	stored, _ := json.Marshal(decoded)
	if string(stored) != string(manifests[0].Raw) {
		t.Fatalf("encoded %q\nstored  %q", manifests[0].Raw, stored)
	}
}

// TestInjectPreservedState: the state a failover preserved labels the copies on the clusters the binding
// moved to, not those it already ran on nor the one it left.
func TestInjectPreservedState(t *testing.T) {
	records := []workv1alpha1.FailoverRecord{{FromCluster: "m2", Reason: "ApplicationFailure", ClustersBeforeFailover: []string{"m1", "m2"},
		PreservedLabelState: map[string]string{"checkpoint": "ckpt-42"}}}
	for _, tt := range []struct {
		cluster string
		want    string
	}{{"m3", "ckpt-42"}, {"m1", ""}, {"m2", ""}} {
		m := parse(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web"}}}`)
		injectPreservedState(m, records, tt.cluster)
		if got := m.GetLabels()["checkpoint"]; got != tt.want || m.GetLabels()["app"] != "web" {
			t.Errorf("%s: labels %v, want checkpoint=%q next to app=web", tt.cluster, m.GetLabels(), tt.want)
		}
	}
}

// TestRenderIgnoresTheClaim: a template renders the same before and after the detector's claim labels land.
// A template without labels once rendered "labels": {} after its claim, so a Work written before the claim
// was written again after it, and the status its agent had reported no longer described its generation.
func TestRenderIgnoresTheClaim(t *testing.T) {
	for _, labels := range []string{``, `"labels":{"app":"web"},`} {
		before := parse(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{`+labels+`"name":"web","namespace":"shop"},"data":{"v":"1"}}`)
		claimed := before.DeepCopy()
		claimedLabels := map[string]string{"propagationpolicy.flotilla.io/name": "p", "propagationpolicy.flotilla.io/namespace": "shop"}
		maps.Copy(claimedLabels, before.GetLabels())
		claimed.SetLabels(claimedLabels)
		a, _ := Render(before, workv1alpha1.TargetCluster{Name: "m1"}, nil).MarshalJSON()
		b, _ := Render(claimed, workv1alpha1.TargetCluster{Name: "m1"}, nil).MarshalJSON()
		if string(a) != string(b) {
			t.Errorf("rendered before the claim:\n%s\nafter it:\n%s", a, b)
		}
	}
}
