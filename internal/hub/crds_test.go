package hub

import "testing"

// TestCRDsDoNotClash: the CRDs the hub installs, Flotilla's and the SIG-Multicluster ones (the inventory's
// ClusterProfile and the multi-cluster services' kinds share multicluster.x-k8s.io), have distinct names,
// and within a group distinct kinds, plurals and short names.
func TestCRDsDoNotClash(t *testing.T) {
	crds, err := CRDs(true, true)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	claim := func(key, by string) {
		if other, ok := seen[key]; ok {
			t.Errorf("%s: claimed by %s and %s", key, other, by)
		}
		seen[key] = by
	}
	for _, crd := range crds {
		n, g := crd.Spec.Names, crd.Spec.Group
		claim("crd "+crd.Name, crd.Name)
		claim("kind "+g+"/"+n.Kind, crd.Name)
		claim("plural "+g+"/"+n.Plural, crd.Name)
		for _, s := range n.ShortNames {
			claim("short name "+s, crd.Name)
		}
	}
	if _, ok := seen["crd clusterprofiles.multicluster.x-k8s.io"]; !ok {
		t.Errorf("the hub does not install the ClusterProfile CRD")
	}
}

// TestPeerCRDsFollowTheirFlags: --karmada-apis and --ocm-apis each add their groups' CRDs and nothing else;
// OCM's are its four add-on kinds, its four cluster kinds and its two work kinds (ManifestWork, ManifestWorkReplicaSet).
func TestPeerCRDsFollowTheirFlags(t *testing.T) {
	groups := func(karmada, ocm bool) map[string]int {
		crds, err := CRDs(karmada, ocm)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, crd := range crds {
			out[crd.Spec.Group]++
		}
		return out
	}
	none, both := groups(false, false), groups(true, true)
	if none["policy.karmada.io"] != 0 || none["addon.open-cluster-management.io"] != 0 || none["cluster.open-cluster-management.io"] != 0 {
		t.Errorf("with both flags off the hub installs peer CRDs: %v", none)
	}
	if both["addon.open-cluster-management.io"] != 4 || both["cluster.open-cluster-management.io"] != 4 || both["work.open-cluster-management.io"] != 2 || both["policy.karmada.io"] == 0 {
		t.Errorf("with both flags on: %v", both)
	}
	if ocmOnly := groups(false, true); ocmOnly["policy.karmada.io"] != 0 || ocmOnly["addon.open-cluster-management.io"] != 4 {
		t.Errorf("with --ocm-apis alone: %v", ocmOnly)
	}
}
