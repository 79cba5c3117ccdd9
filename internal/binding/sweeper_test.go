package binding

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestVerdict: a Work is an orphan when its labels name no owner, when the owner they name is not found, or
// when it is a binding of the same name created again that does not claim the Work; a read error is an
// error, never an orphan.
func TestVerdict(t *testing.T) {
	owners := append(bindingOwners[:2:2], exportOwner{})
	work := func(labels map[string]string, uid string) *workv1alpha1.Work {
		w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ClusterNamespace("a"), Name: "shop.web-deployment", Labels: labels}}
		if uid != "" {
			w.Annotations = map[string]string{workv1alpha1.AnnotationBindingUID: uid}
		}
		return w
	}
	rb := map[string]string{workv1alpha1.LabelBindingNamespace: "shop", workv1alpha1.LabelBindingName: "web-deployment"}
	crb := map[string]string{workv1alpha1.LabelBindingNamespace: "", workv1alpha1.LabelBindingName: "ns-namespace"}
	binding := func(uid string, clusters ...string) client.Object {
		b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment", UID: types.UID(uid)}}
		for _, c := range clusters {
			b.Spec.Clusters = append(b.Spec.Clusters, workv1alpha1.TargetCluster{Name: c})
		}
		return b
	}
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: workv1alpha1.GroupVersion.Group, Resource: "resourcebindings"}, "web-deployment")
	tests := []struct {
		name     string
		work     *workv1alpha1.Work
		owner    client.Object
		readErr  error
		wantRead client.ObjectKey
		orphan   string // a part of the reason; "" for none
		wantErr  bool
	}{
		{name: "no labels", work: work(nil, ""), orphan: "name no binding"},
		{name: "only a binding namespace", work: work(map[string]string{workv1alpha1.LabelBindingNamespace: "shop"}, ""), orphan: "name no binding"},
		{name: "its binding exists and wrote it", work: work(rb, "u1"), owner: binding("u1"), wantRead: client.ObjectKey{Namespace: "shop", Name: "web-deployment"}},
		{name: "written before Works recorded the UID", work: work(rb, ""), owner: binding("u2"), wantRead: client.ObjectKey{Namespace: "shop", Name: "web-deployment"}},
		{name: "its binding is gone", work: work(rb, "u1"), readErr: notFound, wantRead: client.ObjectKey{Namespace: "shop", Name: "web-deployment"},
			orphan: "ResourceBinding shop/web-deployment does not exist"},
		{name: "its cluster binding is gone", work: work(crb, "u1"), readErr: notFound, wantRead: client.ObjectKey{Name: "ns-namespace"},
			orphan: "ClusterResourceBinding ns-namespace does not exist"},
		{name: "reading the binding failed", work: work(rb, "u1"), readErr: errors.New("connection refused"),
			wantRead: client.ObjectKey{Namespace: "shop", Name: "web-deployment"}, wantErr: true},
		{name: "a new binding of the name, elsewhere", work: work(rb, "u1"), owner: binding("u2", "b"),
			wantRead: client.ObjectKey{Namespace: "shop", Name: "web-deployment"}, orphan: "created again (UID u2)"},
		{name: "a new binding of the name, on its cluster", work: work(rb, "u1"), owner: binding("u2", "a"),
			wantRead: client.ObjectKey{Namespace: "shop", Name: "web-deployment"}},
		{name: "another owner's, present", work: work(map[string]string{"export": "web"}, ""), owner: binding(""), wantRead: client.ObjectKey{Namespace: "shop", Name: "web"}},
		{name: "another owner's, gone", work: work(map[string]string{"export": "web"}, ""), readErr: notFound, wantRead: client.ObjectKey{Namespace: "shop", Name: "web"},
			orphan: "ServiceExport shop/web does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var read *client.ObjectKey
			why, err := verdict(tt.work, owners, func(_ WorkOwner, key client.ObjectKey) (client.Object, error) {
				read = &key
				return tt.owner, tt.readErr
			})
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want one: %v", err, tt.wantErr)
			}
			if tt.orphan == "" && why != "" || tt.orphan != "" && !strings.Contains(why, tt.orphan) {
				t.Fatalf("verdict %q, want %q", why, tt.orphan)
			}
			if tt.wantRead == (client.ObjectKey{}) && read != nil || tt.wantRead != (client.ObjectKey{}) && (read == nil || *read != tt.wantRead) {
				t.Fatalf("read %v, want %v", read, tt.wantRead)
			}
		})
	}
}

// exportOwner is another controller's kind: it owns the Works labelled export=NAME, as ServiceExport
// shop/NAME, and every Work that names it.
type exportOwner struct{}

func (exportOwner) Kind() string                                { return "ServiceExport" }
func (exportOwner) New() client.Object                          { return &workv1alpha1.ResourceBinding{} }
func (exportOwner) Labels(client.Object) map[string]string      { return nil }
func (exportOwner) Owns(client.Object, *workv1alpha1.Work) bool { return true }
func (exportOwner) Of(w *workv1alpha1.Work) (client.ObjectKey, bool) {
	return client.ObjectKey{Namespace: "shop", Name: w.Labels["export"]}, w.Labels["export"] != ""
}

// TestSweeperWakes: the sweeper judges new Works and Works whose owner may have changed, in cluster
// namespaces only, and leaves Works being deleted to their deletion.
func TestSweeperWakes(t *testing.T) {
	w := func(namespace string, labels map[string]string, uid string, deleted bool) *workv1alpha1.Work {
		out := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "w", Labels: labels,
			Annotations: map[string]string{workv1alpha1.AnnotationBindingUID: uid}}}
		if deleted {
			out.DeletionTimestamp = &metav1.Time{}
		}
		return out
	}
	cluster := clusterv1alpha1.ClusterNamespace("a")
	labels := map[string]string{workv1alpha1.LabelBindingName: "web-deployment"}
	if !sweeperWakes.Create(event.CreateEvent{Object: w(cluster, nil, "", false)}) {
		t.Error("a new Work in a cluster's namespace is not judged")
	}
	if sweeperWakes.Create(event.CreateEvent{Object: w("default", nil, "", false)}) {
		t.Error("a Work outside the cluster namespaces, which nothing applies, is judged")
	}
	for name, tt := range map[string]struct {
		old, updated *workv1alpha1.Work
		want         bool
	}{
		"labels changed":    {w(cluster, labels, "u1", false), w(cluster, nil, "u1", false), true},
		"binding UID":       {w(cluster, labels, "u1", false), w(cluster, labels, "u2", false), true},
		"status or spec":    {w(cluster, labels, "u1", false), w(cluster, labels, "u1", false), false},
		"deleted meanwhile": {w(cluster, labels, "u1", false), w(cluster, nil, "u1", true), false},
		"outside a cluster": {w("default", labels, "u1", false), w("default", nil, "u1", false), false},
	} {
		if got := sweeperWakes.Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.updated}); got != tt.want {
			t.Errorf("%s: judged %v, want %v", name, got, tt.want)
		}
	}
}
