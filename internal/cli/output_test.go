package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestPrintObject: the object formats print as kubectl's: name as KIND.GROUP/NAME lines, jsonpath and
// go-template over the List; a format without its template, or unknown, is refused by name.
func TestPrintObject(t *testing.T) {
	list := &clusterv1alpha1.ClusterList{TypeMeta: metav1.TypeMeta{APIVersion: clusterv1alpha1.GroupVersion.String(), Kind: "ClusterList"}}
	for _, name := range []string{"m1", "m2"} {
		list.Items = append(list.Items, clusterv1alpha1.Cluster{
			TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1alpha1.GroupVersion.String(), Kind: "Cluster"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"region": "eu-" + name}},
		})
	}
	tests := []struct {
		format, want, wantErr string
	}{
		{format: "name", want: "cluster.cluster.flotilla.io/m1\ncluster.cluster.flotilla.io/m2\n"},
		{format: "jsonpath={.items[*].metadata.name}", want: "m1 m2"},
		{format: `go-template={{range .items}}{{.metadata.labels.region}},{{end}}`, want: "eu-m1,eu-m2,"},
		{format: "json", want: `"kind": "ClusterList"`},
		{format: "yaml", want: "- apiVersion: cluster.flotilla.io/v1alpha1\n  kind: Cluster\n"},
		{format: "jsonpath=", wantErr: "jsonpath= needs a template"},
		{format: "jsonpath={.items[", wantErr: `--output "jsonpath={.items["`},
		{format: "go-template={{.nope", wantErr: "--output"},
		{format: "table", wantErr: `--output "table": want wide, name, yaml, json, jsonpath=TEMPLATE or go-template=TEMPLATE`},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			var out bytes.Buffer
			err := printObject(&out, tt.format, list)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				if verr := validateOutput(tt.format); verr == nil {
					t.Fatalf("validateOutput(%q) accepts it", tt.format)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tt.want) {
				t.Fatalf("-o %s printed\n%s\nwant %q", tt.format, out.String(), tt.want)
			}
		})
	}
}

// TestPrintBindingsNoHeaders: --no-headers drops the header line and keeps the rows.
func TestPrintBindingsNoHeaders(t *testing.T) {
	b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment"}}
	b.Spec.Resource = workv1alpha1.ObjectReference{Kind: "Deployment", Name: "web"}
	var with, without bytes.Buffer
	if err := printBindings(&with, []workv1alpha1.Binding{b}, printers.PrintOptions{}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := printBindings(&without, []workv1alpha1.Binding{b}, printers.PrintOptions{NoHeaders: true}, time.Now()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(with.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "NAMESPACE") ||
		strings.Join(strings.Fields(without.String()), " ") != strings.Join(strings.Fields(lines[1]), " ") {
		t.Fatalf("with headers:\n%s\nwithout:\n%s", with.String(), without.String())
	}
}
