package dashboard

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeschema "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	metadatafake "k8s.io/client-go/metadata/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// Sizes of the benchmarks' fleet: 100 hollow clusters (Cluster objects with a full status and no member
// behind them) and 1,000 Deployments, each divided over 3 clusters, with a Work per cluster.
const (
	benchClusters  = 100
	benchTemplates = 1000
	benchSpread    = 3
)

func benchFleet() []client.Object {
	var objs []client.Object
	for i := range benchClusters {
		c := &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%03d", i)},
			Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull, Region: fmt.Sprintf("region-%d", i%5), Zones: []string{fmt.Sprintf("zone-%d", i%10)}},
			Status: clusterv1alpha1.ClusterStatus{KubernetesVersion: "v1.37.2",
				Conditions:      []metav1.Condition{{Type: clusterv1alpha1.ClusterConditionReady, Status: metav1.ConditionTrue, Reason: "Healthy"}},
				NodeSummary:     &clusterv1alpha1.NodeSummary{TotalNum: 3, ReadyNum: 3},
				ResourceSummary: &clusterv1alpha1.ResourceSummary{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("96"), corev1.ResourceMemory: resource.MustParse("768Gi"), corev1.ResourcePods: resource.MustParse("330")}}}}
		objs = append(objs, c)
	}
	for i := range benchTemplates {
		ns, name := fmt.Sprintf("team-%d", i%20), fmt.Sprintf("app-%04d", i)
		objs = append(objs, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{"propagationpolicy.flotilla.io/namespace": ns, "propagationpolicy.flotilla.io/name": "apps"}}})
		b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-deployment"},
			Spec: workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: ns, Name: name}, Replicas: 6}}
		for j := range benchSpread {
			cluster := fmt.Sprintf("c%03d", (i+j*7)%benchClusters)
			b.Spec.Clusters = append(b.Spec.Clusters, workv1alpha1.TargetCluster{Name: cluster, Replicas: 2})
			b.Status.AggregatedStatus = append(b.Status.AggregatedStatus, workv1alpha1.AggregatedStatusItem{ClusterName: cluster, Applied: true, Health: workv1alpha1.ResourceHealthy})
		}
		b.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, Reason: "Scheduled"},
			{Type: workv1alpha1.ConditionHealthy, Status: metav1.ConditionTrue, Reason: "Healthy"}}
		objs = append(objs, b)
	}
	return objs
}

func benchServer(b *testing.B) *Server {
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(benchFleet()...).Build()
	s, err := New(Direct{Reader: c}, &Notifier{subs: map[int]chan Change{}}, "")
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func benchPage(b *testing.B, path string) {
	s := benchServer(b)
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != http.StatusOK {
			b.Fatalf("%s: %d %s", path, w.Code, w.Body.String())
		}
	}
}

// BenchmarkFleetPage renders the fleet page of 100 clusters (the server's time, reads from an in-memory
// client included).
func BenchmarkFleetPage(b *testing.B) { benchPage(b, Prefix) }

// BenchmarkWorkloadsPage renders the workloads page of 1,000 templates.
func BenchmarkWorkloadsPage(b *testing.B) { benchPage(b, Prefix+"workloads") }

// BenchmarkNotifierMemory reports the heap the dashboard's shared change watch keeps for the fleet: the
// metadata of its clusters, bindings and Works (memory-MiB).
func BenchmarkNotifierMemory(b *testing.B) {
	gvrs := map[string]schema.GroupVersionResource{}
	for gvr := range watched {
		gvrs[gvr.Resource] = gvr
	}
	var metas []runtimeschema.Object
	for _, o := range benchFleet() {
		var kind, resource string
		switch o.(type) {
		case *clusterv1alpha1.Cluster:
			kind, resource = "Cluster", "clusters"
		case *workv1alpha1.ResourceBinding:
			kind, resource = "ResourceBinding", "resourcebindings"
			for j := range benchSpread {
				metas = append(metas, &metav1.PartialObjectMetadata{
					TypeMeta:   metav1.TypeMeta{APIVersion: workv1alpha1.GroupVersion.String(), Kind: "Work"},
					ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("flotilla-cluster-c%03d", j), Name: o.GetNamespace() + "." + o.GetName(), Labels: map[string]string{workv1alpha1.LabelBindingName: o.GetName(), workv1alpha1.LabelBindingNamespace: o.GetNamespace()}}})
			}
		default:
			continue
		}
		gvr := gvrs[resource]
		metas = append(metas, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: gvr.GroupVersion().String(), Kind: kind},
			ObjectMeta: metav1.ObjectMeta{Namespace: o.GetNamespace(), Name: o.GetName(), UID: "0123456789abcdef", ResourceVersion: "12345",
				CreationTimestamp: metav1.NewTime(time.Now()), Labels: map[string]string{"app": "web"}}})
	}
	sch := metadatafake.NewTestScheme()
	for _, gvk := range []schema.GroupVersionKind{clusterv1alpha1.GroupVersion.WithKind("Cluster"), workv1alpha1.GroupVersion.WithKind("ResourceBinding"),
		workv1alpha1.GroupVersion.WithKind("Work")} {
		sch.AddKnownTypeWithName(gvk, &metav1.PartialObjectMetadata{})
		sch.AddKnownTypeWithName(gvk.GroupVersion().WithKind(gvk.Kind+"List"), &metav1.PartialObjectMetadataList{})
	}
	meta := metadatafake.NewSimpleMetadataClient(sch, metas...)
	var measured []*Notifier
	for b.Loop() {
		before := heap()
		n, err := newNotifier(meta, "", func(schema.GroupVersionResource, string) (bool, error) { return true, nil })
		if err != nil {
			b.Fatal(err)
		}
		stop := make(chan struct{})
		n.Start(stop)
		n.WaitForSync(stop)
		// Every notifier measured stays alive, so none is collected while another is measured.
		measured = append(measured, n)
		b.ReportMetric(float64(int64(heap())-int64(before))/(1<<20), "memory-MiB")
		defer close(stop)
	}
	runtime.KeepAlive(measured)
}

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkWorkloadsPageAll renders all 1,000 rows (?all=1).
func BenchmarkWorkloadsPageAll(b *testing.B) { benchPage(b, Prefix+"workloads?all=1") }
