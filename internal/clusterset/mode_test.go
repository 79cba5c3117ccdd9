package clusterset

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

func TestRecordMode(t *testing.T) {
	ctx := context.Background()
	cluster := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}}
	for _, tc := range []struct {
		name    string
		objects []client.Object
		want    Mode // the flag
		mode    Mode // recorded
	}{
		{"a new hub requires bindings", nil, "", RequireBindings},
		{"a new hub with the flag", nil, Open, Open},
		{"a hub upgraded from before cluster sets stays open", []client.Object{cluster}, "", Open},
		{"an upgraded hub switched by the flag", []client.Object{cluster}, RequireBindings, RequireBindings},
		{"a record stays without the flag", []client.Object{ModeObject(RequireBindings), cluster}, "", RequireBindings},
		{"the flag changes a record", []client.Object{ModeObject(RequireBindings)}, Open, Open},
		{"the flag mends a bad record", []client.Object{ModeObject("Closed")}, Open, Open},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(tc.objects...).Build()
			got, err := RecordMode(ctx, c, tc.want)
			if err != nil {
				t.Fatal(err)
			}
			read, err := ReadMode(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.mode || read != tc.mode {
				t.Errorf("recorded %s, read back %s; want %s", got, read, tc.mode)
			}
		})
	}
	// A record that is not a mode is an error, not a guess, until the flag mends it.
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(ModeObject("Closed")).Build()
	if _, err := RecordMode(ctx, c, ""); err == nil || !strings.Contains(err.Error(), `"Closed" is not a cluster-set mode`) {
		t.Errorf("a bad record: got %v", err)
	}
	if _, err := ReadMode(ctx, fake.NewClientBuilder().WithScheme(scheme.New()).Build()); err == nil {
		t.Error("a missing record read as a mode")
	}
}
