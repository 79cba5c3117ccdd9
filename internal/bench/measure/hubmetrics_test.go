package measure

import (
	"maps"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
)

// TestGoMemoryOf: the memory classes, heap goal and goroutines of a scrape, in MiB; other families are not
// classes.
func TestGoMemoryOf(t *testing.T) {
	text := `# TYPE go_memory_classes_heap_objects_bytes gauge
go_memory_classes_heap_objects_bytes 4.194304e+08
# TYPE go_memory_classes_heap_stacks_bytes gauge
go_memory_classes_heap_stacks_bytes 1.048576e+08
# TYPE go_memory_classes_total_bytes gauge
go_memory_classes_total_bytes 1.073741824e+09
# TYPE go_gc_heap_goal_bytes gauge
go_gc_heap_goal_bytes 6.291456e+08
# TYPE go_goroutines gauge
go_goroutines 11920
# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes 4.4e+08
`
	metrics, err := parseHubMetrics(strings.NewReader(text), expfmt.NewFormat(expfmt.TypeTextPlain))
	if err != nil {
		t.Fatal(err)
	}
	got := GoMemoryOf(metrics)
	want := map[string]float64{"heap_objects": 400, "heap_stacks": 100, "total": 1024}
	if !maps.Equal(got.ClassesMiB, want) || got.HeapGoalMiB != 600 || got.Goroutines != 11920 {
		t.Fatalf("got %+v, want classes %v, heap goal 600, 11920 goroutines", got, want)
	}
	if empty := GoMemoryOf(HubMetrics{}); len(empty.ClassesMiB) != 0 || empty.HeapGoalMiB != 0 {
		t.Fatalf("a scrape without Go metrics gave %+v", empty)
	}
}
