package bench

import (
	"strings"
	"testing"
	"time"
)

func TestAddOnOptionsValidate(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(o *AddOnOptions)
		want   string
	}{
		{"valid", func(*AddOnOptions) {}, ""},
		{"no clusters", func(o *AddOnOptions) { o.Clusters = 0 }, "--clusters 0"},
		{"rest too short", func(o *AddOnOptions) { o.Rest = time.Second }, "--rest 1s"},
		{"no timeout", func(o *AddOnOptions) { o.Timeout = 0 }, "--timeout 0s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := AddOnOptions{Clusters: 2, Rest: 10 * time.Second, Timeout: time.Minute}
			tt.change(&o)
			err := o.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}
