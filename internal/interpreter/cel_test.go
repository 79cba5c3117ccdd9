package interpreter

import (
	"context"
	"strings"
	"testing"
)

// TestCELCostLimit: without any time limit, an expression whose cost grows past the API server's per-call
// CEL budget is stopped by its cost, however long it would run.
func TestCELCostLimit(t *testing.T) {
	p, err := CEL{}.Compile(OpHealthInterpretation, "object.items.all(x, object.items.all(y, object.items.all(z, x + y + z >= 0)))")
	if err != nil {
		t.Fatal(err)
	}
	items := make([]any, 150)
	for i := range items {
		items[i] = int64(i)
	}
	_, err = p.Eval(context.Background(), map[string]any{"object": map[string]any{"items": items}})
	if err == nil || !strings.Contains(err.Error(), "cost limit") {
		t.Fatalf("error %v, want the cost limit exceeded", err)
	}
}
