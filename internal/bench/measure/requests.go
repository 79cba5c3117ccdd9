package measure

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// The hub's API requests are counted by the hub's kube-apiserver itself (apiserver_request_total, by verb,
// resource, subresource and code), so they include every client: Flotilla's controllers, the agents, and
// the benchmark's own requests (one create, patch or delete per object; its watches).

// requestKey is one series of apiserver_request_total, with the verb named as in RBAC.
type requestKey struct {
	verb, resource, code string
	// write says whether the verb changes objects.
	write bool
}

// RequestCounts are the request counters of one scrape.
type RequestCounts map[requestKey]float64

// writeVerbs are the verbs that change objects, as apiserver_request_total names them (APPLY is a
// server-side-apply PATCH), with the names the report uses.
var writeVerbs = map[string]string{
	"POST": "create", "PUT": "update", "PATCH": "patch", "APPLY": "apply", "DELETE": "delete",
	"DELETECOLLECTION": "deletecollection",
}

// nonResource names requests for URLs that are not resources (/metrics, /readyz, discovery).
const nonResource = "(non-resource)"

// RequestCountsOf reads apiserver_request_total from a scrape of the hub's metrics.
func RequestCountsOf(metrics HubMetrics) (RequestCounts, error) {
	family, ok := metrics["apiserver_request_total"]
	if !ok {
		return nil, fmt.Errorf("the hub's metrics have no apiserver_request_total")
	}
	counts := RequestCounts{}
	for _, m := range family.GetMetric() {
		labels := labelsOf(m)
		resource := labels["resource"]
		switch {
		case resource == "":
			resource = nonResource
		case labels["subresource"] != "":
			resource += "/" + labels["subresource"]
		}
		verb, write := writeVerbs[labels["verb"]]
		if !write {
			verb = strings.ToLower(labels["verb"])
		}
		counts[requestKey{verb: verb, resource: resource, code: labels["code"], write: write}] += m.GetCounter().GetValue()
	}
	return counts, nil
}

// SettledMetrics scrapes the hub's metrics once a second until its writes stop for a second (Leases aside:
// they are renewed at rest), at most for 10 s, so that writes a wave causes after its last stage (status
// catching up) are counted with it, and returns the last scrape.
func SettledMetrics(ctx context.Context, hub kubernetes.Interface) (HubMetrics, error) {
	last, err := ScrapeHubMetrics(ctx, hub)
	if err != nil {
		return nil, err
	}
	lastCounts, err := RequestCountsOf(last)
	if err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
		next, err := ScrapeHubMetrics(ctx, hub)
		if err != nil {
			return nil, err
		}
		nextCounts, err := RequestCountsOf(next)
		if err != nil {
			return nil, err
		}
		if nextCounts.writes("leases") == lastCounts.writes("leases") {
			return next, nil
		}
		last, lastCounts = next, nextCounts
	}
	return last, nil
}

// Since returns the requests counted after before was scraped.
func (c RequestCounts) Since(before RequestCounts) RequestCounts {
	delta := RequestCounts{}
	for k, n := range c {
		if d := n - before[k]; d > 0 {
			delta[k] = d
		}
	}
	return delta
}

// writes sums the write requests, leaving out resources in except.
func (c RequestCounts) writes(except ...string) float64 {
	var n float64
	for k, v := range c {
		if k.write && !slices.Contains(except, k.resource) {
			n += v
		}
	}
	return n
}

// WritesByResource sums the write requests by resource (resource/subresource).
func (c RequestCounts) WritesByResource() map[string]float64 {
	by := map[string]float64{}
	for k, v := range c {
		if k.write {
			by[k.resource] += v
		}
	}
	return by
}

// HubRequests are the hub's API requests of one wave, divided by the number of objects.
type HubRequests struct {
	// Writes and Reads are the totals per object; failed writes are counted in Writes too.
	Writes float64 `json:"writes"`
	Reads  float64 `json:"reads"`
	// FailedWrites are write requests answered with an error (a 409 AlreadyExists or Conflict, ...).
	FailedWrites float64 `json:"failedWrites"`
	// WritesByResource and ReadsByResource are per object by resource (resource/subresource), then verb.
	WritesByResource map[string]map[string]float64 `json:"writesByResource"`
	ReadsByResource  map[string]map[string]float64 `json:"readsByResource"`
	// FailedWritesBy are the failed writes per object, by "verb resource code".
	FailedWritesBy map[string]float64 `json:"failedWritesBy,omitempty"`
}

// PerObject divides the requests of a wave by its number of objects.
func (c RequestCounts) PerObject(objects int) HubRequests {
	r := HubRequests{WritesByResource: map[string]map[string]float64{}, ReadsByResource: map[string]map[string]float64{},
		FailedWritesBy: map[string]float64{}}
	for k, n := range c {
		n /= float64(objects)
		by := r.ReadsByResource
		if k.write {
			by = r.WritesByResource
			r.Writes += n
			if !strings.HasPrefix(k.code, "2") {
				r.FailedWrites += n
				r.FailedWritesBy[k.verb+" "+k.resource+" "+k.code] += n
			}
		} else {
			r.Reads += n
		}
		if by[k.resource] == nil {
			by[k.resource] = map[string]float64{}
		}
		by[k.resource][k.verb] += n
	}
	return r
}

// writeColumns and readColumns are the verbs the table shows, in order.
var (
	writeColumns = []string{"create", "update", "patch", "apply", "delete"}
	readColumns  = []string{"get", "list", "watch"}
)

// PrintRequests prints the requests per object: totals, then writes and reads by resource and verb, then
// the failed writes.
func PrintRequests(out io.Writer, indent string, r HubRequests) {
	fmt.Fprintf(out, "%shub API requests per object: %.2f writes (%.2f failed), %.2f reads\n", indent, r.Writes, r.FailedWrites, r.Reads)
	table := func(title string, by map[string]map[string]float64, columns []string) {
		if len(by) == 0 {
			return
		}
		fmt.Fprintf(out, "%s%-32s", indent, title)
		for _, c := range columns {
			fmt.Fprintf(out, " %8s", c)
		}
		fmt.Fprintf(out, " %8s\n", "other")
		for _, resource := range slices.Sorted(maps.Keys(by)) {
			fmt.Fprintf(out, "%s%-32s", indent, resource)
			other := 0.0
			for verb, n := range by[resource] {
				if !slices.Contains(columns, verb) {
					other += n
				}
			}
			for _, c := range columns {
				fmt.Fprintf(out, " %8.2f", by[resource][c])
			}
			fmt.Fprintf(out, " %8.2f\n", other)
		}
	}
	table("writes by resource", r.WritesByResource, writeColumns)
	table("reads by resource", r.ReadsByResource, readColumns)
	for _, k := range slices.Sorted(maps.Keys(r.FailedWritesBy)) {
		fmt.Fprintf(out, "%sfailed: %-40s %8.2f\n", indent, k, r.FailedWritesBy[k])
	}
}
