package mcs

import (
	"encoding/json"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
)

func TestParseConsumers(t *testing.T) {
	cases := []struct {
		value   string
		want    []string
		wantErr bool
	}{
		{value: "", want: nil},
		{value: "*", want: nil},
		{value: " m3 , m1,m3", want: []string{"m1", "m3"}},
		{value: "m1,", wantErr: true},
		{value: "M1", wantErr: true},
		{value: "team=blue", wantErr: true},
	}
	for _, tc := range cases {
		got, err := parseConsumers(tc.value)
		if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
			t.Errorf("parseConsumers(%q) = %v, %v; want %v, error %v", tc.value, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestConsumerManifests: a consumer gets the CRD first (without a status subresource), the ServiceImport with
// the providers in its status.clusters, a selector-less derived Service
// with the imported ports, and one slice per reported slice, labelled so that kube-proxy serves it behind the
// derived Service and the member's EndpointSlice controller leaves it alone.
func TestConsumerManifests(t *testing.T) {
	imp := &mcsv1alpha1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: mcsv1alpha1.ServiceImportSpec{Type: mcsv1alpha1.Headless, Ports: []mcsv1alpha1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
	slice := func(name, ip string) discoveryv1.EndpointSlice {
		return discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{ip}}}}
	}
	obs := &observation{slices: map[string][]discoveryv1.EndpointSlice{
		"m2": {slice("shop.web-b", "10.2.0.1")},
		"m1": {slice("shop.web-a", "10.1.0.1")},
	}}
	manifests, err := consumerManifests(imp, obs)
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, m := range manifests {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(m.Raw, &u.Object); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind()+"/"+o.GetName())
	}
	want := []string{"CustomResourceDefinition/serviceimports.multicluster.x-k8s.io", "ServiceImport/web", "Service/derived-web",
		"EndpointSlice/imported-m1-web-a", "EndpointSlice/imported-m2-web-b"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("manifests %v, want %v", kinds, want)
	}
	svc := &corev1.Service{}
	if err := json.Unmarshal(manifests[2].Raw, svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Selector != nil || svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 80 {
		t.Errorf("derived Service %+v", svc.Spec)
	}
	for i, cluster := range []string{"m1", "m2"} {
		l := objs[3+i].GetLabels()
		if l[discoveryv1.LabelServiceName] != "derived-web" || l[discoveryv1.LabelManagedBy] != ManagedBy ||
			l[LabelServiceName] != "web" || l[LabelSourceCluster] != cluster || objs[3+i].GetNamespace() != "shop" {
			t.Errorf("slice from %s labelled %v in %q", cluster, l, objs[3+i].GetNamespace())
		}
	}
	if clusters, _, _ := unstructured.NestedSlice(objs[1].Object, "status", "clusters"); len(clusters) != 2 ||
		clusters[0].(map[string]any)["cluster"] != "m1" || clusters[1].(map[string]any)["cluster"] != "m2" {
		t.Errorf("the ServiceImport's status.clusters %v, want m1 and m2", clusters)
	}
	if _, found := objs[2].Object["status"]; found {
		t.Errorf("the derived Service manifest carries a status")
	}
	// The consumer's API server stores the status with the rest only when the CRD has no status subresource.
	for _, v := range objs[0].Object["spec"].(map[string]any)["versions"].([]any) {
		if _, found, _ := unstructured.NestedFieldNoCopy(v.(map[string]any), "subresources", "status"); found {
			t.Errorf("the consumer's ServiceImport CRD has a status subresource in version %v", v.(map[string]any)["name"])
		}
	}
}
