package integration

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/mcs"
	"github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestHubCollectorFollowsMemberSlicesByWatching: the hub's collector runs, as for Push clusters, with the test
// hub as the member of a cluster and a resync of an hour, so nothing reads the member again on a timer. A
// member slice created, changed and deleted reaches the hub's report each time, through the watch on the
// member's EndpointSlices. (The cluster is a Pull one, so the hub's own Push collector leaves it alone.)
func TestHubCollectorFollowsMemberSlicesByWatching(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const cluster, ns = "mcs-watch", "mcs-watch"
	clusterNamespace := clusterv1alpha1.ClusterNamespace(cluster)
	createPullCluster(t, cluster)
	createNamespace(t, ns)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:  scheme.New(),
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{clusterNamespace: {}}},
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	serves := func(c *clusterv1alpha1.Cluster) bool { return c.Name == cluster }
	config := func(context.Context, *clusterv1alpha1.Cluster) (*rest.Config, error) { return env.Config, nil }
	if err := mcs.SetupMemberCollector(mgr, "watch-test-collector", serves, config, time.Hour); err != nil {
		t.Fatal(err)
	}
	var stopped sync.WaitGroup
	stopped.Go(func() {
		if err := mgr.Start(ctx); err != nil {
			t.Error(err)
		}
	})
	defer stopped.Wait()
	defer cancel()

	request := &mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNamespace, Name: ns + ".web",
		Labels: map[string]string{mcs.LabelExportNamespace: ns, mcs.LabelServiceName: "web"}}}
	create(t, request)
	memberSlice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-watched", Labels: map[string]string{
			discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "endpointslice-test.flotilla.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.8.0.1"}}},
		Ports:       []discoveryv1.EndpointPort{{Port: ptr.To[int32](80), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	report := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNamespace, Name: ns + ".web-watched"}}
	reportHas := func(addresses ...string) {
		t.Helper()
		testenv.Eventually(t, time.Minute, fmt.Sprintf("the report holding %v", addresses), func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(report), report); err != nil {
				return err
			}
			var got []string
			for _, e := range report.Endpoints {
				got = append(got, e.Addresses...)
			}
			if !slices.Equal(got, addresses) || report.Labels[mcs.LabelSourceCluster] != cluster {
				return fmt.Errorf("addresses %v, labels %v", got, report.Labels)
			}
			return nil
		})
	}

	create(t, memberSlice)
	reportHas("10.8.0.1")

	memberSlice.Endpoints = append(memberSlice.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.8.0.2"}})
	if err := env.Client.Update(ctx, memberSlice); err != nil {
		t.Fatal(err)
	}
	reportHas("10.8.0.1", "10.8.0.2")

	if err := env.Client.Delete(ctx, memberSlice); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyGone(t, env.Client, report, time.Minute)
}
