package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/bench/hollow"
	"github.com/flotilla-io/flotilla/internal/bench/measure"
	"github.com/flotilla-io/flotilla/internal/dashboard"
)

// dashboardClient reads the hub's dashboard with the admin's TLS credentials, as a browser would.
type dashboardClient struct {
	host   string
	http   *http.Client
	stream *eventStream
}

func newDashboardClient(cfg *rest.Config, port int) (*dashboardClient, error) {
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &dashboardClient{host: "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), http: c}, nil
}

// get fetches path; partial asks for the page's main element only, as a live refresh does.
func (d *dashboardClient) get(ctx context.Context, path string, partial bool) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.host+path, nil)
	if err != nil {
		return "", err
	}
	if partial {
		req.Header.Set("X-Dashboard-Partial", "1")
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %.300s", path, resp.Status, body)
	}
	return string(body), nil
}

// The pages timed, and what marks one row of each (a cluster's tile, a workload's row).
var (
	pageNames = []string{"fleet", "workloads", "workloadsAll"}
	pages     = map[string]struct{ path, row string }{
		"fleet":        {dashboard.Prefix, `data-cluster="`},
		"workloads":    {dashboard.Prefix + "workloads", `data-workload="`},
		"workloadsAll": {dashboard.Prefix + "workloads?all=1", `data-workload="`},
	}
)

// timePages fetches each page twice to warm the hub's caches (the impersonating client, authorization),
// then Requests times one after another, and checks that each shows what the fleet holds.
func (d *dashboardClient) timePages(ctx context.Context, o DashboardOptions) (map[string]PageTimes, error) {
	want := map[string]int{"fleet": o.Clusters, "workloads": min(o.Templates, 200), "workloadsAll": o.Templates}
	out := map[string]PageTimes{}
	for _, name := range pageNames {
		page := pages[name]
		var ds []time.Duration
		var body string
		for i := range o.Requests + 2 {
			start := time.Now()
			var err error
			if body, err = d.get(ctx, page.path, false); err != nil {
				return nil, err
			}
			if i >= 2 {
				ds = append(ds, time.Since(start))
			}
		}
		rows := strings.Count(body, page.row)
		if rows != want[name] {
			return nil, fmt.Errorf("%s shows %d rows, want %d", page.path, rows, want[name])
		}
		out[name] = PageTimes{Path: page.path, Bytes: len(body), Rows: rows, Seconds: measure.Percentiles(ds)}
	}
	return out, nil
}

// eventStream follows the dashboard's event stream and passes on when each change event arrived. When the
// hub ends the stream it connects again a second later, as a browser's EventSource does.
type eventStream struct {
	events     chan time.Time
	reconnects atomic.Int32
	cancel     context.CancelFunc
	done       sync.WaitGroup
}

func (d *dashboardClient) openStream(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	s := &eventStream{events: make(chan time.Time, 1024), cancel: cancel}
	body, err := d.subscribe(ctx)
	if err != nil {
		cancel()
		return err
	}
	s.done.Go(func() {
		for {
			lines := bufio.NewScanner(body)
			for lines.Scan() {
				if lines.Text() == "event: change" {
					select {
					case s.events <- time.Now():
					default:
					}
				}
			}
			_ = body.Close()
			for {
				if sleep(ctx, time.Second) != nil {
					return
				}
				if body, err = d.subscribe(ctx); err == nil {
					s.reconnects.Add(1)
					break
				}
			}
		}
	})
	d.stream = s
	return nil
}

func (d *dashboardClient) subscribe(ctx context.Context) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.host+dashboard.Prefix+"events", nil)
	if err != nil {
		return nil, err
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("event stream: %s", resp.Status)
	}
	return resp.Body, nil
}

func (d *dashboardClient) stopStream() {
	if d.stream != nil {
		d.stream.cancel()
		d.stream.done.Wait()
	}
}

// next waits for the next change event, up to timeout; false when none came.
func (s *eventStream) next(ctx context.Context, timeout time.Duration) (time.Time, bool) {
	select {
	case at := <-s.events:
		return at, true
	case <-ctx.Done():
	case <-time.After(timeout):
	}
	return time.Time{}, false
}

// drain forgets the events that arrived so far and says how many.
func (s *eventStream) drain() int {
	for n := 0; ; n++ {
		select {
		case <-s.events:
		default:
			return n
		}
	}
}

// LiveUpdates are the live changes timed, from the change's request returning.
type LiveUpdates struct {
	Updates int `json:"updates"`
	// All and ByChange (taint, scale): to the first change event on the stream, and to the first refresh
	// of the page (fetched again on each event, as the browser does) that shows the change.
	All      LiveTimes            `json:"all"`
	ByChange map[string]LiveTimes `json:"byChange"`
	// Missed changes did not show within liveTimeout.
	Missed int `json:"missed"`
	// EventsPerSecondAtRest is the stream's events while nothing is changed on purpose.
	EventsPerSecondAtRest float64 `json:"eventsPerSecondAtRest"`
	// Reconnects counts the times the hub ended the stream and it was opened again.
	Reconnects int `json:"reconnects"`
}

// LiveTimes are percentiles in seconds.
type LiveTimes struct {
	Event map[string]float64 `json:"event"`
	Page  map[string]float64 `json:"page"`
}

const (
	changeTaint = "taint"
	changeScale = "scale"
	liveTimeout = 30 * time.Second
)

// liveCluster is tainted and untainted; template 0 is scaled, and shows its replicas on liveCluster:
// template 0 is in group 0, which holds cluster 0.
var liveCluster = hollow.ClusterName(0)

// liveChange is one change a person would make, and how its page shows it.
type liveChange struct {
	kind, page string
	apply      func(ctx context.Context, admin client.Client) error
	shown      func(page string) bool
}

// changeAt returns the k-th change: taint liveCluster, scale template 0, untaint, scale, ...
func changeAt(k int) liveChange {
	if k%2 == 1 {
		replicas := int32(2 + (k/2)%2)
		return liveChange{kind: changeScale, page: pages["workloads"].path,
			apply: func(ctx context.Context, admin client.Client) error {
				d := &appsv1.Deployment{}
				if err := admin.Get(ctx, client.ObjectKey{Namespace: benchNamespace, Name: templateName(0)}, d); err != nil {
					return err
				}
				patch := client.MergeFrom(d.DeepCopy())
				d.Spec.Replicas = &replicas
				return admin.Patch(ctx, d, patch)
			},
			shown: func(page string) bool {
				row := element(page, `data-workload="`+benchNamespace+"/"+templateName(0)+`"`, "</tr>")
				return strings.Contains(row, fmt.Sprintf(`data-chip="%s">%s: %d <span aria-hidden`, liveCluster, liveCluster, replicas))
			}}
	}
	tainted := (k/2)%2 == 0
	taint := fmt.Sprintf("%s=%d:%s", liveTaint, k, corev1.TaintEffectNoSchedule)
	return liveChange{kind: changeTaint, page: pages["fleet"].path,
		apply: func(ctx context.Context, admin client.Client) error {
			c := &clusterv1alpha1.Cluster{}
			if err := admin.Get(ctx, client.ObjectKey{Name: liveCluster}, c); err != nil {
				return err
			}
			patch := client.MergeFromWithOptions(c.DeepCopy(), client.MergeFromWithOptimisticLock{})
			var kept []corev1.Taint
			for _, t := range c.Spec.Taints {
				if t.Key != liveTaint {
					kept = append(kept, t)
				}
			}
			if tainted {
				kept = append(kept, corev1.Taint{Key: liveTaint, Value: fmt.Sprint(k), Effect: corev1.TaintEffectNoSchedule})
			}
			c.Spec.Taints = kept
			return admin.Patch(ctx, c, patch)
		},
		shown: func(page string) bool {
			tile := element(page, `data-cluster="`+liveCluster+`"`, "</li>")
			if tainted {
				return strings.Contains(tile, taint)
			}
			return tile != "" && !strings.Contains(tile, liveTaint)
		}}
}

// element is the part of page from marker to the next end, or nothing.
func element(page, marker, end string) string {
	i := strings.Index(page, marker)
	if i < 0 {
		return ""
	}
	rest := page[i:]
	if j := strings.Index(rest, end); j >= 0 {
		return rest[:j]
	}
	return rest
}

// timeLive opens the event stream, counts its events at rest, then makes Updates changes, each once the
// stream has been quiet for a second (so that the event that follows is the change's), and times each
// change to its first event and to a refresh of its page that shows it.
func (d *dashboardClient) timeLive(ctx context.Context, admin client.Client, o DashboardOptions) (LiveUpdates, error) {
	if err := d.openStream(ctx); err != nil {
		return LiveUpdates{}, err
	}
	const atRest = 5 * time.Second
	d.stream.drain()
	if err := sleep(ctx, atRest); err != nil {
		return LiveUpdates{}, err
	}
	result := LiveUpdates{Updates: o.Updates, EventsPerSecondAtRest: float64(d.stream.drain()) / atRest.Seconds(), ByChange: map[string]LiveTimes{}}
	events, shown := map[string][]time.Duration{}, map[string][]time.Duration{}
	for k := range o.Updates {
		d.waitQuiet(ctx)
		change := changeAt(k)
		d.stream.drain()
		if err := change.apply(ctx, admin); err != nil {
			return LiveUpdates{}, fmt.Errorf("%s: %w", change.kind, err)
		}
		event, page, err := d.follow(ctx, change, time.Now())
		if err != nil {
			return LiveUpdates{}, err
		}
		if page == 0 {
			result.Missed++
			continue
		}
		events[change.kind] = append(events[change.kind], event)
		shown[change.kind] = append(shown[change.kind], page)
	}
	var allEvents, allPages []time.Duration
	for _, kind := range []string{changeTaint, changeScale} {
		result.ByChange[kind] = LiveTimes{Event: measure.Percentiles(events[kind]), Page: measure.Percentiles(shown[kind])}
		allEvents, allPages = append(allEvents, events[kind]...), append(allPages, shown[kind]...)
	}
	result.All = LiveTimes{Event: measure.Percentiles(allEvents), Page: measure.Percentiles(allPages)}
	result.Reconnects = int(d.stream.reconnects.Load())
	return result, nil
}

// follow does what the page does after a change: on each event it fetches itself again (once more at once
// when events came during a fetch), until it shows the change. It returns the time from since to the first
// event and to that refresh; zero for the refresh when the change did not show within liveTimeout.
func (d *dashboardClient) follow(ctx context.Context, change liveChange, since time.Time) (time.Duration, time.Duration, error) {
	deadline := since.Add(liveTimeout)
	var first time.Duration
	for {
		at, ok := d.stream.next(ctx, time.Until(deadline))
		if !ok {
			return first, 0, ctx.Err()
		}
		if first == 0 {
			first = max(at.Sub(since), time.Nanosecond)
		}
		d.stream.drain()
		body, err := d.get(ctx, change.page, true)
		if err != nil {
			return 0, 0, err
		}
		if change.shown(body) {
			return first, time.Since(since), nil
		}
	}
}

// waitQuiet waits until the stream has had no event for a second, at most 15 s: the hub's work after the
// last change (Works, acknowledgements, status) has settled.
func (d *dashboardClient) waitQuiet(ctx context.Context) {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if _, ok := d.stream.next(ctx, time.Second); !ok {
			return
		}
	}
}
