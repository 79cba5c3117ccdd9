package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/mcs"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// memberSlice is an EndpointSlice of Service namespace/service as a member's EndpointSlice controller
// would write it (here in the test hub, the member of these tests' clusters).
func memberSlice(namespace, name, service string, t discoveryv1.AddressType, endpoints ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{
			discoveryv1.LabelServiceName: service, discoveryv1.LabelManagedBy: "endpointslice-test.flotilla.io"}},
		AddressType: t,
		Endpoints:   endpoints,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
}

// exportCondition waits until the ServiceExport's EndpointsValid condition has the status and reason and a
// message that contains message.
func exportCondition(t *testing.T, export *mcsv1alpha1.ServiceExport, status metav1.ConditionStatus, reason mcsv1alpha1.ServiceExportConditionReason, message string) {
	t.Helper()
	testenv.Eventually(t, time.Minute, fmt.Sprintf("EndpointsValid=%s (%s) saying %q", status, reason, message), func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(export), export); err != nil {
			return err
		}
		c := meta.FindStatusCondition(export.Status.Conditions, string(mcs.ConditionEndpointsValid))
		if c == nil || c.Status != status || c.Reason != string(reason) || !strings.Contains(c.Message, message) {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
}

// TestImportedEndpointsAreChecked: a Push member (the test hub, whose one Node has the pod CIDR
// 10.7.16.0/24) exports an IPv4 Service whose slices hold a pod's address, one outside the pod CIDR, a
// multicast one, a hostname no Pod stands behind, and an IPv6 slice. The consumer gets only the pod's
// addresses, and the hostname only where a Pod is referenced; the ServiceExport's EndpointsValid condition
// counts what was refused until the member's slices are clean. (A loopback or link-local address never gets
// this far: the API server refuses it in an EndpointSlice, the member's as the hub's.)
func TestImportedEndpointsAreChecked(t *testing.T) {
	ctx := context.Background()
	const ns, provider, consumer = "mcs-checked", "mcs-checked", "mcs-checked-consumer"
	create(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "mcs-checked-node"},
		Spec: corev1.NodeSpec{PodCIDR: "10.7.16.0/24", PodCIDRs: []string{"10.7.16.0/24"}}})
	pushCluster(t, provider, map[string][]byte{"token": []byte(memberToken(t)), "caBundle": env.Config.CAData}, nil)
	testenv.Eventually(t, time.Minute, "the member's pod CIDR in its Cluster's status", func() error {
		c := &clusterv1alpha1.Cluster{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: provider}, c); err != nil {
			return err
		}
		if !slices.Equal(c.Status.PodCIDRs, []string{"10.7.16.0/24"}) {
			return fmt.Errorf("podCIDRs %v", c.Status.PodCIDRs)
		}
		return nil
	})
	placeableCluster(t, consumer, nil)
	updateClusterStatus(t, consumer, func(s *clusterv1alpha1.ClusterStatus) {
		s.APIEnablements = []clusterv1alpha1.APIEnablement{{GroupVersion: "v1", Resources: []clusterv1alpha1.APIResource{
			{Name: "configmaps", Kind: "ConfigMap"}, {Name: "services", Kind: "Service"}}}}
	})
	createNamespace(t, ns)
	create(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}})
	create(t, servicePolicy(ns, "web", provider))

	loopback := memberSlice(ns, "web-loopback", "web", discoveryv1.AddressTypeIPv4, discoveryv1.Endpoint{Addresses: []string{"127.0.0.1"}})
	if err := env.Client.Create(ctx, loopback); !apierrors.IsInvalid(err) {
		t.Fatalf("the API server took an EndpointSlice with a loopback address: %v", err)
	}
	pod := &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web-0"}
	ipv4 := memberSlice(ns, "web-checked", "web", discoveryv1.AddressTypeIPv4,
		discoveryv1.Endpoint{Addresses: []string{"10.7.16.5"}, Hostname: ptr.To("web-0"), TargetRef: pod},
		discoveryv1.Endpoint{Addresses: []string{"10.7.16.6"}, Hostname: ptr.To("web-1")},
		discoveryv1.Endpoint{Addresses: []string{"10.7.99.1"}},
		discoveryv1.Endpoint{Addresses: []string{"239.1.2.3"}})
	ipv6 := memberSlice(ns, "web-checked-v6", "web", discoveryv1.AddressTypeIPv6, discoveryv1.Endpoint{Addresses: []string{"fd00::1"}})
	create(t, ipv4)
	create(t, ipv6)
	export := &mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web",
		Annotations: map[string]string{mcs.AnnotationConsumers: consumer}}}
	create(t, export)

	work := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ClusterNamespace(consumer), Name: mcs.ConsumerWorkName(ns, "web")}}
	testenv.Eventually(t, time.Minute, "the consumer's Work holding only the pod addresses", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(work), work); err != nil {
			return err
		}
		imported, err := consumerSlices(work)
		if err != nil {
			return err
		}
		var got []string
		for _, name := range slices.Sorted(maps.Keys(imported)) {
			for _, e := range imported[name].Endpoints {
				got = append(got, fmt.Sprintf("%s %s %s", name, e.Addresses[0], ptr.Deref(e.Hostname, "-")))
			}
		}
		want := []string{"imported-mcs-checked-web-checked 10.7.16.5 web-0", "imported-mcs-checked-web-checked 10.7.16.6 -"}
		if !slices.Equal(got, want) || len(imported) != 1 {
			return fmt.Errorf("%d slices, endpoints %q", len(imported), got)
		}
		return nil
	})
	exportCondition(t, export, metav1.ConditionFalse, mcs.ReasonEndpointsRefused,
		"cluster mcs-checked: slices refused whole: 1, endpoints refused: 3, hostnames dropped: 1")

	t.Run("once the member's slices are clean, nothing is refused", func(t *testing.T) {
		if err := env.Client.Delete(ctx, ipv6); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ipv4), ipv4); err != nil {
			t.Fatal(err)
		}
		ipv4.Endpoints = ipv4.Endpoints[:1]
		if err := env.Client.Update(ctx, ipv4); err != nil {
			t.Fatal(err)
		}
		exportCondition(t, export, metav1.ConditionTrue, mcs.ReasonEndpointsValid, "every reported endpoint passed the checks")
	})
}

// TestReportQuotaCapsEachCluster: a cluster's namespace takes registration.MaxReportedEndpointSlices
// EndpointSlices and refuses the next one. A Push member (the test hub) exports a Service of three slices;
// once the namespace is full, the ServiceExport's EndpointsValid condition says so, and two slices the member
// adds then are reported once two others in the namespace are deleted.
func TestReportQuotaCapsEachCluster(t *testing.T) {
	ctx := context.Background()
	const ns, cluster = "mcs-quota", "mcs-quota"
	clusterNamespace := clusterv1alpha1.ClusterNamespace(cluster)
	pushCluster(t, cluster, map[string][]byte{"token": []byte(memberToken(t)), "caBundle": env.Config.CAData}, nil)
	testenv.Eventually(t, time.Minute, "the report quota of the cluster's namespace counted", func() error {
		quota := &corev1.ResourceQuota{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: clusterNamespace, Name: registration.ReportQuota}, quota); err != nil {
			return err
		}
		if hard := quota.Status.Hard[registration.ReportedSlicesResource]; hard.Value() != registration.MaxReportedEndpointSlices {
			return fmt.Errorf("status %+v", quota.Status)
		}
		return nil
	})
	createNamespace(t, ns)
	create(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}})
	create(t, servicePolicy(ns, "web", cluster))
	web := func(i int) *discoveryv1.EndpointSlice {
		return memberSlice(ns, fmt.Sprintf("web-%d", i), "web", discoveryv1.AddressTypeIPv4,
			discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.9.1.%d", i+1)}})
	}
	for i := range 3 {
		create(t, web(i))
	}
	export := &mcsv1alpha1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web",
		Annotations: map[string]string{mcs.AnnotationConsumers: "nobody-yet"}}}
	create(t, export)
	reportsOfWeb := func(want int) {
		t.Helper()
		testenv.Eventually(t, time.Minute, fmt.Sprintf("%d reports of web", want), func() error {
			list := &discoveryv1.EndpointSliceList{}
			if err := env.Client.List(ctx, list, client.InNamespace(clusterNamespace),
				client.MatchingLabels{mcs.LabelExportNamespace: ns, mcs.LabelServiceName: "web"}); err != nil {
				return err
			}
			if len(list.Items) != want {
				return fmt.Errorf("%d reports", len(list.Items))
			}
			return nil
		})
	}
	reportsOfWeb(3)
	exportCondition(t, export, metav1.ConditionTrue, mcs.ReasonEndpointsValid, "every reported endpoint passed the checks")

	// Slices of no export fill the rest: the collector leaves them alone, and the quota counts them the same.
	filler := func(i int) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: clusterNamespace, Name: fmt.Sprintf("filler-%03d", i)},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.9.0.1"}}},
		}
	}
	var fill errgroup.Group
	fill.SetLimit(4)
	for i := range registration.MaxReportedEndpointSlices - 3 {
		fill.Go(func() error { return env.Client.Create(ctx, filler(i)) })
	}
	if err := fill.Wait(); err != nil {
		t.Fatalf("filling the cluster's namespace: %v", err)
	}
	err := env.Client.Create(ctx, filler(registration.MaxReportedEndpointSlices))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota") {
		t.Fatalf("EndpointSlice %d of the cluster's namespace: got %v, want Forbidden: exceeded quota", registration.MaxReportedEndpointSlices+1, err)
	}
	exportCondition(t, export, metav1.ConditionFalse, mcs.ReasonReportsAtQuota,
		"reports at their quota (ResourceQuota flotilla-reports in the cluster's namespace; more are refused, so endpoints may be missing): mcs-quota")

	create(t, web(3))
	create(t, web(4))
	for i := range 2 {
		if err := env.Client.Delete(ctx, filler(i)); err != nil {
			t.Fatal(err)
		}
	}
	reportsOfWeb(5)
}

// TestReportQuotaOfEarlierRegistrations: a cluster registered before report quotas existed gets its quota
// when the hub starts (EnsureReportQuotas), and one already there is left as it is.
func TestReportQuotaOfEarlierRegistrations(t *testing.T) {
	ctx := context.Background()
	pushCluster(t, "mcs-earlier", map[string][]byte{"token": []byte(memberToken(t))}, nil)
	key := client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace("mcs-earlier"), Name: registration.ReportQuota}
	// As an earlier version registered it: no quota.
	if err := env.Client.Delete(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}); err != nil {
		t.Fatal(err)
	}
	if err := registration.EnsureReportQuotas(ctx, env.Client); err != nil {
		t.Fatal(err)
	}
	quota := &corev1.ResourceQuota{}
	if err := env.Client.Get(ctx, key, quota); err != nil {
		t.Fatalf("no report quota after the hub's start-up pass: %v", err)
	}
	if hard := quota.Spec.Hard[registration.ReportedSlicesResource]; hard.Value() != registration.MaxReportedEndpointSlices {
		t.Fatalf("report quota %v", quota.Spec.Hard)
	}
	if err := registration.EnsureReportQuotas(ctx, env.Client); err != nil {
		t.Fatalf("a second pass, with every quota there: %v", err)
	}
}
