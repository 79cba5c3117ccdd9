package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/selection"
)

// TestPrintPreview: the preview of one template names its policy, marks clusters gained (+) and lost (-)
// and replica changes (~), diffs each cluster's manifest that changes, and says when nothing changes or no
// policy places the template.
func TestPrintPreview(t *testing.T) {
	web := &selection.Propagation{Namespace: "shop", Name: "web"}
	wide := &selection.Propagation{Name: "everything"}
	for _, tt := range []struct {
		name string
		p    templatePreview
		want string
	}{
		{"gain, loss and replicas", templatePreview{name: "Deployment shop/web",
			before: placement{policy: web, targets: []workv1alpha1.TargetCluster{{Name: "a", Replicas: 4}, {Name: "c", Replicas: 1}},
				manifests: map[string]string{"a": "replicas: 4\n", "c": "replicas: 1\n"}},
			after: placement{policy: web, targets: []workv1alpha1.TargetCluster{{Name: "a", Replicas: 2}, {Name: "b", Replicas: 3}},
				manifests: map[string]string{"a": "replicas: 2\n", "b": "replicas: 3\n"}}},
			`Deployment shop/web: placed by PropagationPolicy shop/web
~ cluster a: replicas 4 -> 2
+ cluster b (replicas 3)
- cluster c (replicas 1)
--- a/Deployment shop/web
+++ a/Deployment shop/web
@@ -1 +1 @@
-replicas: 4
+replicas: 2
--- /dev/null
+++ b/Deployment shop/web
@@ -0,0 +1 @@
+replicas: 3
`},
		{"an override alone", templatePreview{name: "ConfigMap shop/conf",
			before: placement{policy: wide, targets: []workv1alpha1.TargetCluster{{Name: "a"}}, manifests: map[string]string{"a": "data: {}\n"}},
			after:  placement{policy: web, targets: []workv1alpha1.TargetCluster{{Name: "a"}}, manifests: map[string]string{"a": "data: {}\nlabels: gold\n"}}},
			`ConfigMap shop/conf: placed by PropagationPolicy shop/web (was ClusterPropagationPolicy everything)
--- a/ConfigMap shop/conf
+++ a/ConfigMap shop/conf
@@ -1 +1,2 @@
 data: {}
+labels: gold
`},
		{"nothing changes", templatePreview{name: "ConfigMap shop/same",
			before: placement{policy: web, targets: []workv1alpha1.TargetCluster{{Name: "a"}}, manifests: map[string]string{"a": "x: 1\n"}},
			after:  placement{policy: web, targets: []workv1alpha1.TargetCluster{{Name: "a"}}, manifests: map[string]string{"a": "x: 1\n"}}},
			"ConfigMap shop/same: placed by PropagationPolicy shop/web\n  no change to its clusters or their manifests\n"},
		{"no policy", templatePreview{name: "ConfigMap shop/lonely"}, "ConfigMap shop/lonely: no policy places it\n"},
		{"released", templatePreview{name: "ConfigMap shop/gone",
			before: placement{policy: web, targets: []workv1alpha1.TargetCluster{{Name: "a"}}, manifests: map[string]string{"a": "x: 1\n"}}},
			"ConfigMap shop/gone: no policy places it any more (was PropagationPolicy shop/web)\n- cluster a\n"},
		{"no fit", templatePreview{name: "ConfigMap shop/big", before: placement{policy: web}, after: placement{policy: web, err: errors.New("0/2 clusters fit")}},
			"ConfigMap shop/big: placed by PropagationPolicy shop/web\n! cannot be placed: 0/2 clusters fit (it stays where it is)\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printPreview(&out, tt.p); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("got\n%s\nwant\n%s", out.String(), tt.want)
			}
		})
	}
}

// TestReadObjects: diff reads YAML streams and JSON, a List's items, and refuses an object without a name and
// a file of nothing.
func TestReadObjects(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name, data string
		want       []string
		wantErr    string
	}{
		{"stream", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: b}\n", []string{"ConfigMap a", "Secret b"}, ""},
		{"json list", `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}]}`, []string{"ConfigMap c"}, ""},
		{"no name", "apiVersion: v1\nkind: ConfigMap\n", nil, "want apiVersion, kind and metadata.name"},
		{"empty", "# nothing\n", nil, "no objects"},
		{"not yaml", "a: [\n", nil, "object 1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			if err := os.WriteFile(path, []byte(tt.data), 0o600); err != nil {
				t.Fatal(err)
			}
			objs, err := readObjects(path, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			var got []string
			for _, o := range objs {
				got = append(got, describeObject(o))
			}
			if err != nil || strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("read %v, %v; want %v", got, err, tt.want)
			}
		})
	}
	if objs, err := readObjects("-", strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: in}\n")); err != nil || len(objs) != 1 {
		t.Fatalf("-f -: %v, %d objects", err, len(objs))
	}
}
