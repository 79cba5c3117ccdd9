package admission

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// countingReader counts the reads admission makes and records each list's kind and resource version.
type countingReader struct {
	client.Reader
	reads  int
	listed []string
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.reads++
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.reads++
	var version string
	if o := (&client.ListOptions{}).ApplyOptions(opts); o.Raw != nil {
		version = o.Raw.ResourceVersion
	}
	c.listed = append(c.listed, fmt.Sprintf("%T at %q", list, version))
	return c.Reader.List(ctx, list, opts...)
}

// TestQuotaReadsNothingForAnUpdateThatAsksNoMore: in a namespace already over its FederatedResourceQuota, an
// update that asks for no more (a label, such as the detector's claim; fewer replicas) passes without a read,
// while a create, more replicas, other requests and a scale are read and refused.
func TestQuotaReadsNothingForAnUpdateThatAsksNoMore(t *testing.T) {
	q := &policyv1alpha1.FederatedResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "cap"},
		Spec: policyv1alpha1.FederatedResourceQuotaSpec{Overall: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}
	deployment := func(replicas int64, cpu string, labels map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"namespace": "team", "name": "web"},
			"spec": map[string]any{"replicas": replicas, "template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "app", "image": "app", "resources": map[string]any{"requests": map[string]any{"cpu": cpu}}}}}}}}}
		u.SetLabels(labels)
		return u
	}
	scale := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
		"metadata": map[string]any{"namespace": "team", "name": "web"}, "spec": map[string]any{"replicas": int64(3)}}}
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	claimed := map[string]string{policyv1alpha1.LabelPropagationPolicyName: "web"}
	for _, c := range []struct {
		name        string
		subresource string
		old, obj    *unstructured.Unstructured
		refused     bool
	}{
		{"create", "", nil, deployment(1, "1", nil), true},
		{"label only", "", deployment(1, "1", nil), deployment(1, "1", claimed), false},
		{"fewer replicas", "", deployment(2, "1", nil), deployment(1, "1", nil), false},
		{"more replicas", "", deployment(1, "1", nil), deployment(2, "1", nil), true},
		{"other requests", "", deployment(1, "1", nil), deployment(1, "2", nil), true},
		{"scale", "scale", scale, scale, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			hub := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(q, deployment(1, "1", nil)).Build()
			reader := &countingReader{Reader: hub}
			err := admitQuota(context.Background(), reader, Request{Resource: deployments, Subresource: c.subresource,
				Namespace: "team", Name: "web", Object: c.obj, OldObject: c.old})
			if c.refused {
				if !apierrors.IsForbidden(err) {
					t.Fatalf("want refused as over the quota, got %v", err)
				}
				if reader.reads == 0 {
					t.Fatal("refused without reading the quota")
				}
				return
			}
			if err != nil || reader.reads != 0 {
				t.Fatalf("want admitted without a read, got %v after %d reads", err, reader.reads)
			}
		})
	}
}

// TestQuotasAreReadFromTheWatchCache: a create reads the namespace's FederatedResourceQuotas from the API
// server's watch cache as it is (resourceVersion 0: a list at the latest version made a user's creates wait
// for that cache during bursts), and, with a quota there, the bindings it counts at the latest version.
func TestQuotasAreReadFromTheWatchCache(t *testing.T) {
	q := &policyv1alpha1.FederatedResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "cap"},
		Spec: policyv1alpha1.FederatedResourceQuotaSpec{Overall: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}
	web := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": "team", "name": "web"},
		"spec": map[string]any{"replicas": int64(1), "template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "app", "image": "app", "resources": map[string]any{"requests": map[string]any{"cpu": "1"}}}}}}}}}
	reader := &countingReader{Reader: fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(q).Build()}
	if err := admitQuota(context.Background(), reader, Request{Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		Namespace: "team", Name: "web", Object: web}); err != nil {
		t.Fatalf("a create within the quota: %v", err)
	}
	want := []string{`*v1alpha1.FederatedResourceQuotaList at "0"`, `*v1alpha1.ResourceBindingList at ""`}
	if !slices.Equal(reader.listed, want) {
		t.Fatalf("listed %q, want %q", reader.listed, want)
	}
}
