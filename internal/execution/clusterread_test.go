package execution

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// gatedReader answers each Get of a Cluster once the test lets it, with the read's number as the Cluster's
// unjoin annotation, or with err.
type gatedReader struct {
	client.Reader
	gate  chan struct{}
	mu    sync.Mutex
	reads int
	err   error
}

func (g *gatedReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	g.mu.Lock()
	g.reads++
	n := g.reads
	g.mu.Unlock()
	<-g.gate
	if g.err != nil {
		return g.err
	}
	obj.SetName(key.Name)
	obj.SetAnnotations(map[string]string{clusterv1alpha1.AnnotationUnjoin: strconv.Itoa(n)})
	return nil
}

func (g *gatedReader) sent() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reads
}

// TestClusterReadsAreSharedButNeverOlder: the Works that ask for a Cluster while a read of it is under way
// share the next read, sent after they asked, not the one under way; and a failed read is their error, not an
// absent Cluster.
func TestClusterReadsAreSharedButNeverOlder(t *testing.T) {
	r := &gatedReader{gate: make(chan struct{})}
	var reads clusterReads
	answer := func(out chan<- string) {
		c, err := reads.get(context.Background(), r, "m1")
		if err != nil {
			out <- "error: " + err.Error()
			return
		}
		out <- c.Annotations[clusterv1alpha1.AnnotationUnjoin]
	}
	first := make(chan string, 1)
	go answer(first)
	for r.sent() < 1 {
		time.Sleep(time.Millisecond)
	}
	later := make(chan string, 3)
	for range 3 {
		go answer(later)
	}
	time.Sleep(50 * time.Millisecond) // the three wait for the next read
	r.gate <- struct{}{}
	if got := <-first; got != "1" {
		t.Fatalf("the first Work got read %q, want 1", got)
	}
	r.gate <- struct{}{}
	for range 3 {
		if got := <-later; got != "2" {
			t.Errorf("a Work that asked during read 1 got read %q, want 2 (sent after it asked)", got)
		}
	}
	if n := r.sent(); n != 2 {
		t.Errorf("%d reads sent for four Works, want 2", n)
	}

	r.err = apierrors.NewServiceUnavailable("the hub is restarting")
	failed := make(chan string, 1)
	go answer(failed)
	r.gate <- struct{}{}
	if got := <-failed; got != "error: the hub is restarting" {
		t.Errorf("a failed read gave %q, want its error", got)
	}
	r.err = apierrors.NewNotFound(schema.GroupResource{Group: "cluster.flotilla.io", Resource: "clusters"}, "m1")
	go func() { r.gate <- struct{}{} }()
	if _, err := reads.get(context.Background(), r, "m1"); !apierrors.IsNotFound(err) {
		t.Errorf("a Cluster not found gave %v, want NotFound", err)
	}
}

// TestClusterReadsGatherInABurst: Works that ask one after another right after a read share the next one,
// sent gather later, rather than each sending its own; and each still gets a read sent after it asked.
func TestClusterReadsGatherInABurst(t *testing.T) {
	r := &gatedReader{gate: make(chan struct{})}
	close(r.gate) // every read is answered at once
	var reads clusterReads
	if _, err := reads.get(context.Background(), r, "m1"); err != nil {
		t.Fatal(err)
	}
	const works = 5
	var wg sync.WaitGroup
	for range works {
		before := r.sent()
		wg.Go(func() {
			c, err := reads.get(context.Background(), r, "m1")
			if err != nil {
				t.Error(err)
				return
			}
			n, _ := strconv.Atoi(c.Annotations[clusterv1alpha1.AnnotationUnjoin])
			if n <= before {
				t.Errorf("a Work that asked after read %d got read %d", before, n)
			}
		})
		time.Sleep(5 * time.Millisecond)
	}
	wg.Wait()
	// Without gathering, each of the five sends its own read: the one before it was answered at once.
	if n := r.sent(); n > 3 {
		t.Errorf("%d reads sent for 1 + %d Works in a burst, want at most 3", n, works)
	}
}
