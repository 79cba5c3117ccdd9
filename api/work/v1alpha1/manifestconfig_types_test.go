package v1alpha1

import "testing"

// TestManifestConfigAndOrphans: a manifest config selects by group, resource, namespace and name, the first
// match winning; a deleteOption orphans all (Orphan), the named objects (SelectivelyOrphan) or none.
func TestManifestConfigAndOrphans(t *testing.T) {
	web := ResourceSelector{Group: "apps", Resource: "deployments", Namespace: "ns", Name: "web"}
	spec := &WorkSpec{ManifestConfigs: []ManifestConfig{
		{ResourceIdentifier: web, UpdateStrategy: &UpdateStrategy{Type: UpdateCreateOnly}},
		{ResourceIdentifier: web, UpdateStrategy: &UpdateStrategy{Type: UpdateReadOnly}},
	}}
	if c := spec.ManifestConfig("apps", "deployments", "ns", "web"); c == nil || c.UpdateStrategy.Type != UpdateCreateOnly {
		t.Errorf("web: %+v", c)
	}
	for _, other := range [][4]string{{"", "deployments", "ns", "web"}, {"apps", "statefulsets", "ns", "web"}, {"apps", "deployments", "", "web"}, {"apps", "deployments", "ns", "api"}} {
		if c := spec.ManifestConfig(other[0], other[1], other[2], other[3]); c != nil {
			t.Errorf("%v selected by %+v", other, c.ResourceIdentifier)
		}
	}

	tests := []struct {
		option    *DeleteOption
		web, api  bool
		preserved bool
	}{
		{nil, false, false, false},
		{nil, false, false, true}, // preserveResourcesOnDeletion is the executor's, not Orphans'
		{&DeleteOption{PropagationPolicy: DeletePropagationDelete}, false, false, false},
		{&DeleteOption{PropagationPolicy: DeletePropagationOrphan}, true, true, false},
		{&DeleteOption{PropagationPolicy: DeletePropagationSelectivelyOrphan, OrphaningRules: []ResourceSelector{web}}, true, false, false},
	}
	for i, tt := range tests {
		spec := &WorkSpec{DeleteOption: tt.option, PreserveResourcesOnDeletion: &tt.preserved}
		if got := spec.Orphans("apps", "deployments", "ns", "web"); got != tt.web {
			t.Errorf("%d: web orphaned %v, want %v", i, got, tt.web)
		}
		if got := spec.Orphans("apps", "deployments", "ns", "api"); got != tt.api {
			t.Errorf("%d: api orphaned %v, want %v", i, got, tt.api)
		}
	}
}
