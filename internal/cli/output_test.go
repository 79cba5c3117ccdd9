package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
		{format: "table", wantErr: `--output "table": want wide, name, yaml, json, jsonpath=TEMPLATE, go-template=TEMPLATE, custom-columns=SPEC or custom-columns-file=FILE`},
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

// TestListOutputTables: every listing prints through one table path, so --no-headers, --show-labels and
// wide mean the same for clusters, bindings and ClusterSets.
func TestListOutputTables(t *testing.T) {
	created := metav1.NewTime(time.Now().Add(-time.Hour))
	cluster := clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "m1", CreationTimestamp: created, Labels: map[string]string{"region": "eu", "tier": "gold"}},
		Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull, Region: "eu-west"}}
	binding := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment"}}
	binding.Spec.Resource = workv1alpha1.ObjectReference{Kind: "Deployment", Name: "web"}
	set := clusterv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "eu", CreationTimestamp: created}}
	seen := map[string]time.Time{"m1": time.Now().Add(-5 * time.Second)}
	tables := map[string]func() *metav1.Table{
		"clusters":    func() *metav1.Table { return clusterTable([]clusterv1alpha1.Cluster{cluster}, seen) },
		"bindings":    func() *metav1.Table { return bindingTable([]workv1alpha1.Binding{binding}, time.Now()) },
		"clustersets": func() *metav1.Table { return clusterSetTable([]clusterv1alpha1.ClusterSet{set}) },
	}
	tests := []struct {
		listing string
		output  listOutput
		want    []string
	}{
		{"clusters", listOutput{}, []string{"NAME MODE READY VERSION NODES CPU MEMORY AGE LAST-SEEN", "m1 Pull Unknown - - - - 60m 5s ago"}},
		{"clusters", listOutput{format: "wide"}, []string{"NAME MODE READY VERSION NODES CPU MEMORY AGE LAST-SEEN TUNNEL PROVIDER REGION ZONES TAINTS",
			"m1 Pull Unknown - - - - 60m 5s ago Unknown - eu-west - -"}},
		{"clusters", listOutput{noHeaders: true, showLabels: true}, []string{"m1 Pull Unknown - - - - 60m 5s ago region=eu,tier=gold"}},
		{"bindings", listOutput{showLabels: true}, []string{"NAMESPACE NAME RESOURCE SCHEDULED APPLIED HEALTHY CLUSTERS EVICTING LABELS",
			"shop web-deployment Deployment/web - - - - - <none>"}},
		{"bindings", listOutput{noHeaders: true}, []string{"shop web-deployment Deployment/web - - - - -"}},
		{"clustersets", listOutput{format: "wide", noHeaders: true}, []string{"eu 0 - 60m cluster.flotilla.io/clusterset=eu"}},
		{"clustersets", listOutput{showLabels: true}, []string{"NAME SELECTOR-TYPE CLUSTERS EMPTY AGE LABELS", "eu 0 - 60m <none>"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %+v", tt.listing, tt.output), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := tt.output.print(&out, &errOut, nil, tables[tt.listing]); err != nil {
				t.Fatal(err)
			}
			if got := collapsedLines(out.String()); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
	t.Run("an empty listing says so on stderr", func(t *testing.T) {
		var out, errOut bytes.Buffer
		if err := (listOutput{}).print(&out, &errOut, nil, func() *metav1.Table { return clusterTable(nil, nil) }); err != nil {
			t.Fatal(err)
		}
		if out.String() != "" || errOut.String() != "No resources found\n" {
			t.Fatalf("stdout %q, stderr %q", out.String(), errOut.String())
		}
	})
	t.Run("heartbeats that could not be read are <unknown>, not never", func(t *testing.T) {
		row := clusterTable([]clusterv1alpha1.Cluster{cluster}, nil).Rows[0]
		if got := row.Cells[8]; got != "<unknown>" {
			t.Fatalf("LAST-SEEN = %v", got)
		}
		if got := clusterTable([]clusterv1alpha1.Cluster{cluster}, map[string]time.Time{}).Rows[0].Cells[8]; got != "never" {
			t.Fatalf("LAST-SEEN without a renewal = %v", got)
		}
	})
}

// TestObjectOutputs: custom columns (from a spec or a file) and managedFields, hidden in json and yaml unless
// --show-managed-fields.
func TestObjectOutputs(t *testing.T) {
	list := &clusterv1alpha1.ClusterList{TypeMeta: metav1.TypeMeta{APIVersion: clusterv1alpha1.GroupVersion.String(), Kind: "ClusterList"}}
	for _, name := range []string{"m1", "m2"} {
		c := clusterv1alpha1.Cluster{
			TypeMeta: metav1.TypeMeta{APIVersion: clusterv1alpha1.GroupVersion.String(), Kind: "Cluster"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"region": "eu-" + name},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "flotilla-agent", Operation: metav1.ManagedFieldsOperationApply}}},
		}
		if name == "m1" {
			c.Spec.Taints = []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}, {Key: "b", Effect: corev1.TaintEffectNoExecute}}
		}
		list.Items = append(list.Items, c)
	}
	file := filepath.Join(t.TempDir(), "columns")
	if err := os.WriteFile(file, []byte("NAME   REGION\n.metadata.name   {.metadata.labels.region}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		output  listOutput
		want    []string
		wantErr string
	}{
		{output: listOutput{format: "custom-columns=NAME:.metadata.name,TAINTS:.spec.taints[*].key,PROVIDER:spec.provider"},
			want: []string{"NAME TAINTS PROVIDER", "m1 a,b <none>", "m2 <none> <none>"}},
		{output: listOutput{format: "custom-columns=NAME:{.metadata.name}", noHeaders: true}, want: []string{"m1", "m2"}},
		{output: listOutput{format: "custom-columns-file=" + file}, want: []string{"NAME REGION", "m1 eu-m1", "m2 eu-m2"}},
		{output: listOutput{format: "custom-columns=NAME"}, wantErr: `column "NAME": want HEADER:PATH`},
		{output: listOutput{format: "custom-columns=N:{.metadata.name"}, wantErr: "column N"},
		{output: listOutput{format: "custom-columns="}, wantErr: "custom-columns= needs columns"},
		{output: listOutput{format: "custom-columns-file=/nonexistent"}, wantErr: "/nonexistent"},
		{output: listOutput{format: "yaml"}, want: []string{"kind: ClusterList"}},
		{output: listOutput{format: "yaml", showManagedFields: true}, want: []string{"managedFields:", "manager: flotilla-agent"}},
		{output: listOutput{format: "json", showManagedFields: true}, want: []string{`"managedFields": [`}},
	}
	for _, tt := range tests {
		t.Run(tt.output.format, func(t *testing.T) {
			var out bytes.Buffer
			err := tt.output.printObjects(&out, list)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || tt.output.validate() == nil {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := out.String()
			if strings.HasPrefix(tt.output.format, "custom-columns") {
				if lines := collapsedLines(got); strings.Join(lines, "\n") != strings.Join(tt.want, "\n") {
					t.Fatalf("got\n%s\nwant\n%s", got, strings.Join(tt.want, "\n"))
				}
				return
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Fatalf("-o %s printed\n%s\nwant %q", tt.output.format, got, w)
				}
			}
			if !tt.output.showManagedFields && strings.Contains(got, "managedFields") {
				t.Fatalf("-o %s printed managedFields without --show-managed-fields:\n%s", tt.output.format, got)
			}
		})
	}
}
