package measure

import (
	"bytes"
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
)

const metricsBefore = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="work.flotilla.io",resource="resourcebindings",scope="resource",subresource="",verb="POST",version="v1alpha1"} 5
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 100
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="GET",version="v1"} 7
# HELP apiserver_request_duration_seconds [STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="leases",scope="resource",subresource="",verb="PUT",version="v1",le="0.005"} 100
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="leases",scope="resource",subresource="",verb="PUT",version="v1",le="+Inf"} 100
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 0.2
apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 100
`

// metricsAfter: 10 objects later. Binding creates 20 (4 of them refused with AlreadyExists), binding status
// applies 10, Work creates 20 and merge patches 10, two lease renewals, deployments read 30 times (get) and
// watched 10 times, one /metrics read; a series that did not exist before appears.
const metricsAfter = `# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="work.flotilla.io",resource="resourcebindings",scope="resource",subresource="",verb="POST",version="v1alpha1"} 21
apiserver_request_total{code="409",component="apiserver",dry_run="",group="work.flotilla.io",resource="resourcebindings",scope="resource",subresource="",verb="POST",version="v1alpha1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="work.flotilla.io",resource="resourcebindings",scope="resource",subresource="status",verb="APPLY",version="v1alpha1"} 10
apiserver_request_total{code="201",component="apiserver",dry_run="",group="work.flotilla.io",resource="works",scope="resource",subresource="",verb="POST",version="v1alpha1"} 20
apiserver_request_total{code="200",component="apiserver",dry_run="",group="work.flotilla.io",resource="works",scope="resource",subresource="",verb="PATCH",version="v1alpha1"} 10
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 102
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="resource",subresource="",verb="GET",version="v1"} 37
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="namespace",subresource="",verb="WATCH",version="v1"} 10
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 1
`

// parseRequestCounts reads apiserver_request_total from metrics in the text format.
func parseRequestCounts(text string) (RequestCounts, error) {
	metrics, err := parseHubMetrics(strings.NewReader(text), expfmt.NewFormat(expfmt.TypeTextPlain))
	if err != nil {
		return nil, err
	}
	return RequestCountsOf(metrics)
}

func TestRequestsPerObject(t *testing.T) {
	before, err := parseRequestCounts(metricsBefore)
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseRequestCounts(metricsAfter)
	if err != nil {
		t.Fatal(err)
	}
	delta := after.Since(before)
	if got := delta.writes("leases"); got != 60 {
		t.Errorf("writes other than leases = %v, want 60", got)
	}
	r := delta.PerObject(10)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if !near(r.Writes, 6.2) || !near(r.FailedWrites, 0.4) || !near(r.Reads, 4.1) {
		t.Errorf("per object: writes %v, failed %v, reads %v; want 6.2, 0.4, 4.1", r.Writes, r.FailedWrites, r.Reads)
	}
	wantWrites := map[string]map[string]float64{
		"resourcebindings":        {"create": 2},
		"resourcebindings/status": {"apply": 1},
		"works":                   {"create": 2, "patch": 1},
		"leases":                  {"update": 0.2},
	}
	if !maps.EqualFunc(r.WritesByResource, wantWrites, maps.Equal) {
		t.Errorf("writes by resource = %v, want %v", r.WritesByResource, wantWrites)
	}
	wantReads := map[string]map[string]float64{"deployments": {"get": 3, "watch": 1}, nonResource: {"get": 0.1}}
	if !maps.EqualFunc(r.ReadsByResource, wantReads, maps.Equal) {
		t.Errorf("reads by resource = %v, want %v", r.ReadsByResource, wantReads)
	}
	if want := map[string]float64{"create resourcebindings 409": 0.4}; !maps.Equal(r.FailedWritesBy, want) {
		t.Errorf("failed writes = %v, want %v", r.FailedWritesBy, want)
	}

	var out bytes.Buffer
	PrintRequests(&out, "  ", r)
	for _, line := range []string{
		"hub API requests per object: 6.20 writes (0.40 failed), 4.10 reads",
		"  works                                2.00     0.00     1.00     0.00     0.00     0.00",
		"failed: create resourcebindings 409",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, out.String())
		}
	}
}

func TestParseRequestCountsRefusesOtherInput(t *testing.T) {
	for name, in := range map[string]string{
		"no request counter":  "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 3\n",
		"not the text format": "<html>forbidden</html>",
	} {
		if _, err := parseRequestCounts(in); err == nil {
			t.Errorf("%s: parsed without an error", name)
		}
	}
}
