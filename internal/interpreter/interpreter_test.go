package interpreter

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func obj(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestReplicas(t *testing.T) {
	d := obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":4,"template":{"spec":{"containers":[
		{"name":"a","resources":{"requests":{"cpu":"100m","memory":"64Mi"}}},{"name":"b","resources":{"requests":{"cpu":"200m"}}}]}}}}`)
	n, req, ok := Replicas(d)
	if !ok || n != 4 || req.Cpu().String() != "300m" || req.Memory().String() != "64Mi" {
		t.Fatalf("got %d %v %v", n, req, ok)
	}
	job := obj(t, `{"apiVersion":"batch/v1","kind":"Job","spec":{"template":{"spec":{"containers":[{"name":"a"}]}}}}`)
	if n, _, ok := Replicas(job); !ok || n != 1 {
		t.Fatalf("job without parallelism: %d %v", n, ok)
	}
	if _, _, ok := Replicas(obj(t, `{"apiVersion":"v1","kind":"ConfigMap"}`)); ok {
		t.Fatal("a ConfigMap has no replicas")
	}
	ReviseReplicas(d, 2)
	if n, _, _ := Replicas(d); n != 2 {
		t.Fatalf("revised to %d", n)
	}
}

func TestHealth(t *testing.T) {
	tests := []struct {
		doc  string
		want workv1alpha1.ResourceHealth
	}{
		{`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"generation":2},"spec":{"replicas":3},"status":{"observedGeneration":2,"replicas":3,"updatedReplicas":3,"availableReplicas":3}}`, workv1alpha1.ResourceHealthy},
		// A rollout whose new pod never starts: the old one is still available and counted in replicas.
		{`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"generation":2},"spec":{"replicas":1},"status":{"observedGeneration":2,"replicas":2,"updatedReplicas":1,"availableReplicas":1}}`, workv1alpha1.ResourceUnhealthy},
		{`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"generation":3},"spec":{"replicas":3},"status":{"observedGeneration":2,"updatedReplicas":3,"availableReplicas":3}}`, workv1alpha1.ResourceUnhealthy},
		{`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"generation":1},"spec":{"replicas":3},"status":{"observedGeneration":1,"updatedReplicas":3,"availableReplicas":2}}`, workv1alpha1.ResourceUnhealthy},
		{`{"apiVersion":"v1","kind":"Pod","status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`, workv1alpha1.ResourceHealthy},
		{`{"apiVersion":"v1","kind":"Pod","status":{"phase":"Pending"}}`, workv1alpha1.ResourceUnhealthy},
		{`{"apiVersion":"v1","kind":"Service","spec":{"type":"ClusterIP"}}`, workv1alpha1.ResourceHealthy},
		{`{"apiVersion":"v1","kind":"Service","spec":{"type":"LoadBalancer"}}`, workv1alpha1.ResourceUnhealthy},
		{`{"apiVersion":"v1","kind":"PersistentVolumeClaim","status":{"phase":"Bound"}}`, workv1alpha1.ResourceHealthy},
		{`{"apiVersion":"batch/v1","kind":"Job","status":{"conditions":[{"type":"Failed","status":"True"}]}}`, workv1alpha1.ResourceUnhealthy},
		{`{"apiVersion":"example.com/v1","kind":"Widget"}`, workv1alpha1.ResourceHealthy},
	}
	for _, tt := range tests {
		if got := Health(obj(t, tt.doc)); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.doc, got, tt.want)
		}
	}
}

func TestDependencies(t *testing.T) {
	d := obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{
		"serviceAccountName":"runner","imagePullSecrets":[{"name":"registry"}],
		"volumes":[{"name":"a","configMap":{"name":"files"}},{"name":"b","persistentVolumeClaim":{"claimName":"data"}},
		           {"name":"c","projected":{"sources":[{"secret":{"name":"tls"}}]}}],
		"containers":[{"name":"x","envFrom":[{"configMapRef":{"name":"env"}}],
		               "env":[{"name":"P","valueFrom":{"secretKeyRef":{"name":"creds","key":"p"}}},{"name":"Q","valueFrom":{"configMapKeyRef":{"name":"env","key":"q"}}}]}]}}}}`)
	var got []string
	for _, dep := range Dependencies(d) {
		got = append(got, dep.Kind+"/"+dep.Name)
	}
	want := "ServiceAccount/runner Secret/registry ConfigMap/files PersistentVolumeClaim/data Secret/tls ConfigMap/env Secret/creds"
	if strings.Join(got, " ") != want {
		t.Fatalf("got  %s\nwant %s", strings.Join(got, " "), want)
	}
	if Dependencies(obj(t, `{"apiVersion":"v1","kind":"ConfigMap"}`)) != nil {
		t.Fatal("a ConfigMap has no dependencies")
	}
}
