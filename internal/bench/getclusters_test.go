package bench

import (
	"strings"
	"testing"
)

func TestGetClustersOptionsValidate(t *testing.T) {
	for _, tt := range []struct {
		o    GetClustersOptions
		want string
	}{
		{GetClustersOptions{Clusters: 0, Requests: 1}, "--clusters 0"},
		{GetClustersOptions{Clusters: 2, Requests: 0}, "--requests 0"},
	} {
		if err := tt.o.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.o, err, tt.want)
		}
	}
	if err := (GetClustersOptions{Clusters: 2, Requests: 1}).Validate(); err != nil {
		t.Errorf("Validate of good options: %v", err)
	}
}
