package v1alpha1

import "testing"

func TestPurgeModeCanonical(t *testing.T) {
	for mode, want := range map[PurgeMode]PurgeMode{
		PurgeImmediately: PurgeDirectly,
		PurgeGraciously:  PurgeGracefully,
		PurgeDirectly:    PurgeDirectly,
		PurgeGracefully:  PurgeGracefully,
		PurgeNever:       PurgeNever,
		"":               "",
	} {
		if got := mode.Canonical(); got != want {
			t.Errorf("%q.Canonical() = %q, want %q", mode, got, want)
		}
	}
}
