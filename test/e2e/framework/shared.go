package framework

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/flotilla-io/flotilla/internal/process"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// Shared is a fleet — a hub and its members — that the tests of a package share, so that each test can be
// short and run alone (`go test -run TestX`) without repeating a long chain: the first test that uses it
// starts it, the package's TestMain stops it. A test on the shared fleet works in a namespace of its own
// (Cluster.Namespace) and undoes what it changes on the clusters themselves (taints, labels, a frozen member)
// before it ends; a test that restarts, kills or unjoins a cluster starts a fleet of its own.
type Shared struct {
	setup func(t *testing.T, s *Shared)

	once    sync.Once
	started bool
	root    string

	mu       sync.Mutex
	clusters []*Cluster
	procs    []*testenv.Process
}

// NewShared returns a shared fleet that setup starts, with StartHub, StartMember and JoinPull/JoinPush, on
// first use.
func NewShared(setup func(t *testing.T, s *Shared)) *Shared {
	return &Shared{setup: setup}
}

// StartHub starts the shared fleet's hub; only setup calls it.
func (s *Shared) StartHub(t *testing.T, extraArgs ...string) *Cluster {
	t.Helper()
	return s.add(newHub(t, s.root, extraArgs))
}

// StartMember starts a member of the shared fleet; only setup calls it.
func (s *Shared) StartMember(t *testing.T, name string, extraArgs ...string) *Cluster {
	t.Helper()
	return s.add(newMember(t, s.root, name, extraArgs))
}

func (s *Shared) add(c *Cluster) *Cluster {
	c.t.Helper()
	c.shared = s
	c.start()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clusters = append(s.clusters, c)
	return c
}

// Use starts the fleet if no test did yet, waits until every member is Ready (a test before may have frozen
// one), and returns the clusters by name, bound to t: their failures fail t, and when t fails it prints the
// end of every cluster's log.
func (s *Shared) Use(t *testing.T) map[string]*Cluster {
	t.Helper()
	s.once.Do(func() {
		root, err := os.MkdirTemp("", "flotilla-e2e-")
		if err != nil {
			t.Fatal(err)
		}
		s.root = root
		s.setup(t, s)
		s.started = true
	})
	if !s.started {
		t.Fatal("the shared fleet did not start; the first test that used it says why")
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.clusters {
			t.Logf("--- last lines of %s ---\n%s", c.logFile, tail(c.logFile, 40))
		}
		for _, p := range s.procs {
			t.Logf("--- last lines of the output of %s ---\n%s", p.Name, tail(p.LogPath, 20))
		}
	})
	bound := map[string]*Cluster{}
	var members []string
	for _, c := range s.clusters {
		b := *c
		b.t = t
		bound[c.Name] = &b
		if c.Name != "hub" {
			members = append(members, c.Name)
		}
	}
	if hub := bound["hub"]; hub != nil {
		WaitClustersReady(t, hub, members...)
	}
	return bound
}

// Stop ends every process of the fleet and removes its files. TestMain calls it once the tests ran.
func (s *Shared) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.procs {
		p.Kill()
	}
	if s.root != "" {
		_ = os.RemoveAll(s.root)
	}
}

// spawn starts a flotilla process that lives as long as its owner: the shared fleet, or the test t when s
// is nil.
func (s *Shared) spawn(t *testing.T, name string, args ...string) *testenv.Process {
	t.Helper()
	if s == nil {
		return testenv.StartBinary(t, Binary(t), name, args...)
	}
	p, err := process.Start(name, filepath.Join(s.root, name+".out"), nil, Binary(t), args...)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.procs = append(s.procs, p)
	return p
}

// dir is where files of the owner's processes go: the shared fleet's directory, or the test t's when s is
// nil.
func (s *Shared) dir(t *testing.T) string {
	if s == nil {
		return t.TempDir()
	}
	return s.root
}

var notInName = regexp.MustCompile(`[^a-z0-9]+`)

// Namespace creates a namespace on this cluster for the test alone, named after it, and returns its name.
// It is left in place when the test ends: deleting it would delete the test's workloads from the members
// while the next test runs.
func (c *Cluster) Namespace() string {
	c.t.Helper()
	name := strings.Trim(notInName.ReplaceAllString(strings.ToLower(strings.TrimPrefix(c.t.Name(), "Test")), "-"), "-")
	name = strings.TrimRight(name[:min(len(name), 50)], "-") + "-" + utilrand.String(5)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := c.Kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
	return name
}
