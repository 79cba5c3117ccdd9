package execution

import (
	"context"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

const (
	// clusterReadTimeout bounds one shared read of a Cluster: it runs for every Work waiting on it, not in the
	// context of any one of them.
	clusterReadTimeout = 30 * time.Second
	// A read of a Cluster sent within burstGap of the one before it is sent gather later, for the Works
	// deleted meanwhile to share it: in a burst of deletes the agent's workers ask one after another, a few
	// milliseconds apart, and most reads were still shared by one or two Works. A Work deleted alone (no read
	// within burstGap) is read at once.
	burstGap = 200 * time.Millisecond
	gather   = 100 * time.Millisecond
)

// clusterReads shares the live reads of a Cluster among the Works finalized at the same time: deleting a
// hundred Works of a cluster read that Cluster a hundred times, one read per Work per member in every delete
// wave. A read is shared only by the Works that asked for it before it was sent, so each Work's answer is still
// read after it asked, never an older one: whether the cluster is being unjoined is as fresh as a read of its
// own (a Work that asks while a read is under way waits for the next one).
type clusterReads struct {
	mu sync.Mutex
	// next is, per Cluster, the read not sent yet that the Works asking now wait for; sending says whether a
	// read of that Cluster is under way (and sends next once it is done); sent is when the last one was sent.
	next    map[string]*clusterRead
	sending map[string]bool
	sent    map[string]time.Time
}

type clusterRead struct {
	done    chan struct{}
	cluster *clusterv1alpha1.Cluster
	err     error
}

// get reads Cluster name from r, sharing the read with the Works that ask at the same time.
func (c *clusterReads) get(ctx context.Context, r client.Reader, name string) (*clusterv1alpha1.Cluster, error) {
	c.mu.Lock()
	if c.next == nil {
		c.next, c.sending, c.sent = map[string]*clusterRead{}, map[string]bool{}, map[string]time.Time{}
	}
	read := c.next[name]
	if read == nil {
		read = &clusterRead{done: make(chan struct{})}
		c.next[name] = read
	}
	if !c.sending[name] {
		c.sending[name] = true
		go c.send(r, name)
	}
	c.mu.Unlock()
	select {
	case <-read.done:
		if read.err != nil {
			return nil, read.err
		}
		return read.cluster.DeepCopy(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// send sends the waiting reads of Cluster name one after the other until none waits, each gather after the
// one before.
func (c *clusterReads) send(r client.Reader, name string) {
	for {
		c.mu.Lock()
		last := c.sent[name]
		c.mu.Unlock()
		if time.Since(last) < burstGap {
			time.Sleep(gather)
		}
		c.mu.Lock()
		read := c.next[name]
		delete(c.next, name)
		if read == nil {
			delete(c.sending, name)
			c.mu.Unlock()
			return
		}
		c.sent[name] = time.Now()
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), clusterReadTimeout)
		read.cluster = &clusterv1alpha1.Cluster{}
		read.err = r.Get(ctx, client.ObjectKey{Name: name}, read.cluster)
		cancel()
		close(read.done)
	}
}
