package dashboard

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metadatafake "k8s.io/client-go/metadata/fake"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// TestNotifierWatchesOnlyWhileSubscribed: no watch runs before a page subscribes; the first subscriber
// starts them and, once they have listed, every subscriber gets one empty Change; changes follow; the
// watches stop a while after the last subscriber left, and start again for the next.
func TestNotifierWatchesOnlyWhileSubscribed(t *testing.T) {
	gvk := clusterv1alpha1.GroupVersion.WithKind("Cluster")
	sch := metadatafake.NewTestScheme()
	sch.AddKnownTypeWithName(gvk, &metav1.PartialObjectMetadata{})
	sch.AddKnownTypeWithName(gvk.GroupVersion().WithKind("ClusterList"), &metav1.PartialObjectMetadataList{})
	clusters := clusterv1alpha1.GroupVersion.WithResource("clusters")
	object := func(name string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind},
			ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	meta := metadatafake.NewSimpleMetadataClient(sch, object("a"), object("b"))
	n, err := newNotifier(meta, "", func(gvr schema.GroupVersionResource, _ string) (bool, error) { return gvr == clusters, nil })
	if err != nil {
		t.Fatal(err)
	}
	n.linger = 50 * time.Millisecond
	stop := make(chan struct{})
	defer close(stop)
	n.Start(stop)

	time.Sleep(100 * time.Millisecond)
	if n.watching() || len(meta.Actions()) > 0 {
		t.Fatalf("watching with nobody subscribed: %v, requests %v", n.watching(), meta.Actions())
	}

	expect := func(ch <-chan Change, want Change) {
		t.Helper()
		select {
		case got := <-ch:
			if got != want {
				t.Fatalf("change %+v, want %+v", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no change %+v", want)
		}
	}
	first, leave := n.Subscribe()
	expect(first, Change{}) // the two Clusters listed: no change each, one for all
	if err := meta.Resource(clusters).Delete(context.Background(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect(first, Change{Resource: clusters})

	leave()
	deadline := time.Now().Add(10 * time.Second)
	for n.watching() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n.watching() {
		t.Fatal("still watching after the last subscriber left")
	}

	again, leave := n.Subscribe()
	defer leave()
	if !n.watching() {
		t.Fatal("a new subscriber did not start the watches")
	}
	expect(again, Change{})
}
