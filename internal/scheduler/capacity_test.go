package scheduler

import (
	"math"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// TestFitting: how many requests fit in a free quantity, counted exactly and between 0 and a replica count's
// maximum, however large or odd the quantities a member reports or a template asks for.
func TestFitting(t *testing.T) {
	for _, tc := range []struct {
		free, request string
		want          int64
	}{
		{"8", "3", 2},
		{"4", "500m", 8},
		{"300m", "100m", 3},
		{"0", "1", 0},
		{"-2", "1", 0},
		{"4", "-1", 0},
		{"1Gi", "128Mi", 8},
		{"9223372036854775807", "1", math.MaxInt32},
		{"1e18", "1m", math.MaxInt32},
		{"1e30", "1e29", 10},
		{"1e18", "3e16", 33},
		{"1e30", "4e20", math.MaxInt32}, // 2.5*10^9 fit: more than a replica count holds
		{"1e16", "2e15", 5},
	} {
		if got := fitting(resource.MustParse(tc.free), resource.MustParse(tc.request)); got != tc.want {
			t.Errorf("%s fit in %s %d times, want %d", tc.request, tc.free, got, tc.want)
		}
	}
}
