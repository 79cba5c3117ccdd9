package v1alpha1

import "testing"

// TestPaths: the paths callers build are the ones the hub serves and the README shows.
func TestPaths(t *testing.T) {
	for got, want := range map[string]string{
		ClusterProxyPath("m1"):                    "/apis/proxy.flotilla.io/v1alpha1/clusters/m1/proxy",
		ClusterAttachPath("m1"):                   "/apis/proxy.flotilla.io/v1alpha1/clusters/m1/attach",
		FleetListPath("/api/v1/pods"):             "/apis/proxy.flotilla.io/v1alpha1/fleet/list/api/v1/pods",
		FleetListPath("apis/apps/v1/deployments"): "/apis/proxy.flotilla.io/v1alpha1/fleet/list/apis/apps/v1/deployments",
	} {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}
