package v1alpha1

import (
	"fmt"
	"strings"
	"testing"
)

// TestListInMessage: a message about thousands of clusters names ten and counts the rest, so it stays far
// below the 32 KiB the API server allows a condition message.
func TestListInMessage(t *testing.T) {
	names := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("member-%04d", i)
		}
		return out
	}
	if got := ListInMessage(names(2)); got != "member-0000, member-0001" {
		t.Errorf("two clusters: %q", got)
	}
	got := ListInMessage(names(5000))
	if !strings.HasSuffix(got, "member-0009 and 4990 more") || len(got) > 200 {
		t.Errorf("5,000 clusters: %q", got)
	}
}
