package v1alpha1

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
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

// TestCredential: each of CredentialFields is a spec field and changes Credential, and a field outside them
// (the sync mode, taints) does not, so admission and the hub's member cache follow one list.
func TestCredential(t *testing.T) {
	values := map[string]string{
		"apiEndpoint": `"https://member.example:6443"`, "insecureSkipTLSVerification": `true`,
		"proxyURL": `"socks5://proxy:1080"`, "secretRef": `{"namespace":"flotilla-system","name":"member1"}`, "id": `"abc"`,
	}
	empty := (&ClusterSpec{}).Credential()
	for _, f := range CredentialFields {
		v, ok := values[f]
		if !ok {
			t.Fatalf("no test value for credential field %s", f)
		}
		decoder := json.NewDecoder(strings.NewReader(fmt.Sprintf(`{%q: %s}`, f, v)))
		decoder.DisallowUnknownFields()
		var spec ClusterSpec
		if err := decoder.Decode(&spec); err != nil {
			t.Fatalf("%s is not a spec field: %v", f, err)
		}
		if spec.Credential() == empty {
			t.Errorf("changing spec.%s leaves the Credential as it was", f)
		}
	}
	other := ClusterSpec{SyncMode: Push, Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}}
	if other.Credential() != empty {
		t.Errorf("sync mode and taints changed the Credential: %q", other.Credential())
	}
}
