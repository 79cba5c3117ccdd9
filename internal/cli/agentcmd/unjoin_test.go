package agentcmd

import (
	"strings"
	"testing"
)

func TestUnjoinRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"unjoin", "m1", "--timeout", "0s"},
		{"unjoin", "m1", "--timeout", "-1m"},
	} {
		root := NewRoot()
		root.SetArgs(args)
		if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "--timeout") {
			t.Fatalf("%v: %v, want an error naming --timeout", args, err)
		}
	}
}
