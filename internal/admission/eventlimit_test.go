package admission

import (
	"bytes"
	"encoding/json"
	"testing"

	"k8s.io/kubernetes/plugin/pkg/admission/eventratelimit"
)

// TestEventRateLimitConfiguration: kube-apiserver's EventRateLimit plugin reads the configuration the hub
// writes, with the limit per namespace.
func TestEventRateLimitConfiguration(t *testing.T) {
	data, err := json.Marshal(EventRateLimit().Configuration)
	if err != nil {
		t.Fatal(err)
	}
	config, err := eventratelimit.LoadConfiguration(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	if len(config.Limits) != 1 || config.Limits[0].Type != "Namespace" || config.Limits[0].QPS != eventQPS || config.Limits[0].Burst != eventBurst {
		t.Fatalf("limits %+v", config.Limits)
	}
}
