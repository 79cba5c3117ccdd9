package binding

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestOwnWritesCoverTheCacheLag: a render whose cache still shows the version an earlier render patched
// over writes nothing when it would write the same, and patches when it would write something else; once the
// cache shows another version the write is forgotten. A create is remembered until the cache shows the Work.
func TestOwnWritesCoverTheCacheLag(t *testing.T) {
	key := client.ObjectKey{Namespace: "flotilla-cluster-a", Name: "default.web-deployment"}
	digest := func(image string) [32]byte {
		manifest := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":[{"image":"` + image + `"}]}}}}`)
		d, err := digestOf(workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: manifest}}}}}, "", "uid", "")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	var o ownWrites
	if o.pending(key, "5", digest("v2")) || o.created(key) {
		t.Fatal("nothing written, yet a write is pending")
	}
	o.wrote(key, "", digest("v1"))
	if !o.created(key) {
		t.Fatal("a create the cache has not shown is forgotten")
	}
	if o.pending(key, "4", digest("v1")) || o.created(key) {
		t.Fatal("the cache showing the created Work did not forget the create")
	}
	o.wrote(key, "5", digest("v2"))
	if !o.pending(key, "5", digest("v2")) {
		t.Fatal("the cache still shows the version patched over, and the render would write the same: not pending")
	}
	if o.pending(key, "5", digest("v3")) {
		t.Fatal("the render would write something else, yet it is told the write is pending")
	}
	if o.pending(key, "6", digest("v2")) || o.pending(key, "5", digest("v2")) {
		t.Fatal("the cache showing a newer version did not forget the write")
	}
}
