package clusterset

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

func TestLookup(t *testing.T) {
	prod := &clusterv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "prod"}}
	bind := func(ns, set string) *clusterv1alpha1.ClusterSetBinding {
		return &clusterv1alpha1.ClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: set}, Spec: clusterv1alpha1.ClusterSetBindingSpec{ClusterSet: set}}
	}
	r := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(prod, bind("team-a", "prod"), bind("team-c", "missing")).Build()
	inProd := map[string]string{clusterv1alpha1.LabelClusterSet: "prod"}
	unlabelled := map[string]string{}
	for _, tc := range []struct {
		namespace string
		mode      Mode
		labels    map[string]string
		want      bool
	}{
		{"team-a", RequireBindings, inProd, true},
		{"team-a", RequireBindings, unlabelled, false},
		{"team-a", Open, unlabelled, false}, // a bound namespace is confined on an open hub too
		{"team-b", RequireBindings, inProd, false},
		{"team-b", Open, inProd, true},
		{"team-c", Open, inProd, false}, // bound to a set that does not exist: granted nothing
		{"", RequireBindings, inProd, true},
	} {
		g, err := Lookup(context.Background(), r, tc.namespace, tc.mode)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Allows(tc.labels); got != tc.want {
			t.Errorf("namespace %q, mode %s: Allows(%v) = %v, want %v", tc.namespace, tc.mode, tc.labels, got, tc.want)
		}
	}
	if got, want := (Grant{Namespace: "team-a"}).Refusal("member1"), "member1 is in no ClusterSet bound to namespace team-a"; got != want {
		t.Errorf("Refusal = %q, want %q", got, want)
	}
	if err := Mode("Closed").Validate(); err == nil {
		t.Error("Mode(Closed).Validate() = nil")
	}
}
