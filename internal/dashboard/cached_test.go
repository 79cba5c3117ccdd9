package dashboard

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestCachedReadsAskFirst: the cached kinds are read from the cache only where a review lets the person read
// them, and answered 403 elsewhere; other kinds, metadata-only reads and reads by field go to the API server
// as the person; a review that fails is an error, never an empty page.
func TestCachedReadsAskFirst(t *testing.T) {
	ctx := context.Background()
	binding := func(ns string) *workv1alpha1.ResourceBinding {
		return &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-deployment"}}
	}
	// The cache holds the bindings; the API server (as the person) holds only an event, so each read shows
	// where it went.
	cache := fake.NewClientBuilder().WithScheme(typed).WithObjects(binding("shop"), binding("bank")).Build()
	api := fake.NewClientBuilder().WithScheme(typed).WithObjects(
		&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "e1"}}).Build()
	var asked []string
	var reviewErr error
	reads := &cachedReads{Client: api, cache: cache, may: func(_ context.Context, verb string, gr schema.GroupResource, namespace, name string) (bool, error) {
		asked = append(asked, verb+" "+gr.String()+" "+namespace+"/"+name)
		return namespace == "shop", reviewErr
	}}

	list := &workv1alpha1.ResourceBindingList{}
	if err := reads.List(ctx, list, client.InNamespace("shop")); err != nil || len(list.Items) != 1 || list.Items[0].Namespace != "shop" {
		t.Errorf("bindings in shop: %v, %d items", err, len(list.Items))
	}
	if err := reads.List(ctx, list); !apierrors.IsForbidden(err) {
		t.Errorf("bindings of every namespace, for a person who may list them in shop only: %v, %d items", err, len(list.Items))
	}
	if err := reads.Get(ctx, client.ObjectKey{Namespace: "bank", Name: "web-deployment"}, &workv1alpha1.ResourceBinding{}); !apierrors.IsForbidden(err) {
		t.Errorf("a binding in bank: %v", err)
	}
	if err := reads.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web-deployment"}, &workv1alpha1.ResourceBinding{}); err != nil {
		t.Errorf("a binding in shop: %v", err)
	}
	want := []string{"list resourcebindings.work.flotilla.io shop/", "list resourcebindings.work.flotilla.io /",
		"get resourcebindings.work.flotilla.io bank/web-deployment", "get resourcebindings.work.flotilla.io shop/web-deployment"}
	if len(asked) != len(want) {
		t.Fatalf("reviews %q, want %q", asked, want)
	}
	for i := range want {
		if asked[i] != want[i] {
			t.Errorf("review %d: %q, want %q", i, asked[i], want[i])
		}
	}

	asked = nil
	events := &corev1.EventList{}
	if err := reads.List(ctx, events, client.InNamespace("shop")); err != nil || len(events.Items) != 1 {
		t.Errorf("events, a kind the cache does not hold: %v, %d items", err, len(events.Items))
	}
	meta := &metav1.PartialObjectMetadataList{}
	meta.SetGroupVersionKind(workv1alpha1.GroupVersion.WithKind("ResourceBindingList"))
	if err := reads.List(ctx, meta, client.InNamespace("shop")); err != nil || len(meta.Items) != 0 {
		t.Errorf("bindings' metadata: %v, %d items (the API server holds none)", err, len(meta.Items))
	}
	if len(asked) != 0 {
		t.Errorf("reads the API server authorizes itself were reviewed too: %q", asked)
	}

	reviewErr = errors.New("the hub is not answering")
	if err := reads.List(ctx, list, client.InNamespace("shop")); err == nil {
		t.Errorf("a failed review read as allowed: %d items", len(list.Items))
	}
}
