package bench

import (
	"strings"
	"testing"
)

func TestFleetListOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		o    FleetListOptions
		want string
	}{
		{FleetListOptions{Clusters: []int{1, 10}, Objects: 20, Requests: 200}, ""},
		{FleetListOptions{Objects: 20, Requests: 200}, "--clusters"},
		{FleetListOptions{Clusters: []int{1, 0}, Objects: 20, Requests: 200}, "--clusters"},
		{FleetListOptions{Clusters: []int{101}, Objects: 20, Requests: 200}, "--clusters"},
		{FleetListOptions{Clusters: []int{1}, Requests: 200}, "--objects"},
		{FleetListOptions{Clusters: []int{1}, Objects: 20}, "--requests"},
	} {
		err := c.o.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want an error naming %q", c.o, err, c.want)
		}
	}
}
