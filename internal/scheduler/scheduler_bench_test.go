package scheduler

import (
	"fmt"
	"testing"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// BenchmarkSchedule schedules one Divided binding of 100 replicas (equal weights) against fleets of growing
// size: every cluster passes the filters, is scored, and gets its share.
func BenchmarkSchedule(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 5000} {
		clusters := make([]clusterv1alpha1.Cluster, n)
		for i := range clusters {
			clusters[i] = cluster(fmt.Sprintf("c%05d", i), []string{"eu", "us"}[i%2])
		}
		spec := deployment(100, divided())
		f := Default()
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.Schedule(spec, clusters, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
