package integration

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestDeletionProtection: a hub object labelled deletion-protected=Always, with Flotilla's label or Karmada's,
// cannot be deleted, and the refusal names the label and the command that lifts it; another value protects
// nothing; once the label is removed, the delete goes through.
func TestDeletionProtection(t *testing.T) {
	ctx := context.Background()
	const ns = "deletion-protection"
	createNamespace(t, ns)
	configMaps := env.Kube.CoreV1().ConfigMaps(ns)
	create := func(name, key, value string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{key: value}}}
		if _, err := configMaps.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{workv1alpha1.LabelDeletionProtected, workv1alpha1.LabelKarmadaDeletionProtected} {
		name := "kept-" + strings.Split(key, ".")[0]
		create(name, key, workv1alpha1.DeletionProtectedAlways)
		err := configMaps.Delete(ctx, name, metav1.DeleteOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("delete of %s labelled %s=Always: want forbidden, got %v", name, key, err)
		}
		want := "configmaps " + name + " is protected from deletion by its label " + key + "=Always; remove the label to delete it: kubectl label configmaps " + name + " -n " + ns + " " + key + "-"
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q\nwant it to say %q", err, want)
		}
		patch := []byte(`{"metadata":{"labels":{"` + key + `":null}}}`)
		if _, err := configMaps.Patch(ctx, name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := configMaps.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete after the label was removed: %v", err)
		}
	}
	create("not-kept", workv1alpha1.LabelDeletionProtected, "Never")
	if err := configMaps.Delete(ctx, "not-kept", metav1.DeleteOptions{}); err != nil {
		t.Errorf("deletion-protected=Never protects nothing, got %v", err)
	}
}
