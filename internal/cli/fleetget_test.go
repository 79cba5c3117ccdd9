package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

func TestPrintFleetTable(t *testing.T) {
	table := func(rows ...[2]string) *metav1.Table {
		tb := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string"}, {Name: "Ready", Type: "string"}, {Name: "Node", Type: "string", Priority: 1}}}
		for _, r := range rows {
			tb.Rows = append(tb.Rows, metav1.TableRow{Cells: []any{r[1], "1/1", "n1"},
				Object: runtime.RawExtension{Raw: []byte(`{"metadata":{"name":"` + r[1] + `","namespace":"` + r[0] + `"}}`)}})
		}
		return tb
	}
	results := []clusterResult{
		{cluster: "m1", table: table([2]string{"shop", "web-1"})},
		{cluster: "m2", err: errors.New("frozen")},
		{cluster: "m3", table: table([2]string{"blog", "web-2"})},
	}
	tests := []struct {
		name string
		q    fleetQuery
		want string
	}{
		{"one namespace", fleetQuery{}, "CLUSTER   NAME    READY\nm1        web-1   1/1\nm3        web-2   1/1\n"},
		{"every namespace", fleetQuery{allNamespaces: true}, "CLUSTER   NAMESPACE   NAME    READY\nm1        shop        web-1   1/1\nm3        blog        web-2   1/1\n"},
		{"wide", fleetQuery{output: listOutput{format: "wide"}}, "CLUSTER   NAME    READY   NODE\nm1        web-1   1/1     n1\nm3        web-2   1/1     n1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := printFleetTable(&out, results, tt.q); err != nil {
				t.Fatal(err)
			}
			if got := out.String(); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	var out bytes.Buffer
	if err := printFleetTable(&out, []clusterResult{{cluster: "m1", err: errors.New("x")}}, fleetQuery{}); err != nil || strings.TrimSpace(out.String()) != "" {
		t.Errorf("with every cluster failing, printed %q, %v: want nothing (the error lines say it)", out.String(), err)
	}
}

func TestMarkCluster(t *testing.T) {
	for _, raw := range []string{
		`{"apiVersion":"v1","kind":"ConfigMapList","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}]}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","annotations":{"x":"y"}}}`,
	} {
		items, err := decodeItems([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		markCluster(items, "m1")
		if len(items) != 1 || items[0].GetName() != "a" || items[0].GetAnnotations()[clusterv1alpha1.AnnotationCluster] != "m1" {
			t.Fatalf("decodeItems and markCluster(%s) = %v", raw, items)
		}
	}
}
