package hub

import "testing"

// TestCRDsDoNotClash: the CRDs the hub installs, Flotilla's and the SIG-Multicluster ones (the inventory's
// ClusterProfile and the multi-cluster services' kinds share multicluster.x-k8s.io), have distinct names,
// and within a group distinct kinds, plurals and short names.
func TestCRDsDoNotClash(t *testing.T) {
	crds, err := CRDs(true)
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
