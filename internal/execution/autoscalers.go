package execution

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	autoscalingv2listers "k8s.io/client-go/listers/autoscaling/v2"
	"k8s.io/client-go/tools/cache"
)

// autoscalerSyncWait bounds how long the first apply of a scalable object waits for the member's
// HorizontalPodAutoscalers to be listed. Later applies do not wait: until the list succeeds (the informer
// keeps trying), they fail at once, rather than hold a worker each.
const autoscalerSyncWait = 10 * time.Second

// autoscalers follows a member's HorizontalPodAutoscalers (autoscaling/v2) in an informer, started when
// the first object with spec.replicas is applied there: the executor asks for every such apply, and a list
// per apply would cost the member more than the apply.
type autoscalers struct {
	once   sync.Once
	waited atomic.Bool
	synced cache.InformerSynced
	lister autoscalingv2listers.HorizontalPodAutoscalerLister
}

// autoscaled says whether a HorizontalPodAutoscaler in the member scales obj (its scaleTargetRef names
// obj's group, kind and name in obj's namespace). It waits for the autoscalers to be listed once; when they
// cannot be, it returns an error rather than "no": the apply is retried.
func (m *Member) autoscaled(ctx context.Context, obj *unstructured.Unstructured) (bool, error) {
	a := &m.autoscalers
	a.once.Do(func() {
		inf := informers.NewSharedInformerFactory(m.watchKube, 0).Autoscaling().V2().HorizontalPodAutoscalers()
		a.synced, a.lister = inf.Informer().HasSynced, inf.Lister()
		go inf.Informer().Run(m.stop)
	})
	if !a.synced() {
		wait, cancel := context.WithTimeout(ctx, autoscalerSyncWait)
		defer cancel()
		if a.waited.Swap(true) {
			cancel()
		}
		if !cache.WaitForCacheSync(wait.Done(), a.synced) {
			return false, fmt.Errorf("cannot tell whether a HorizontalPodAutoscaler scales %s %s: the member's HorizontalPodAutoscalers (autoscaling/v2) could not be listed",
				obj.GetKind(), obj.GetName())
		}
	}
	hpas, err := a.lister.HorizontalPodAutoscalers(obj.GetNamespace()).List(labels.Everything())
	if err != nil {
		return false, err
	}
	group := obj.GroupVersionKind().Group
	for _, hpa := range hpas {
		ref := hpa.Spec.ScaleTargetRef
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil && gv.Group == group && ref.Kind == obj.GetKind() && ref.Name == obj.GetName() {
			return true, nil
		}
	}
	return false, nil
}
