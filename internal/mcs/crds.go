package mcs

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	mcscrd "sigs.k8s.io/mcs-api/config/crd"
	"sigs.k8s.io/yaml"
)

// CRDs returns the Multi-Cluster Services CRDs (ServiceExport, ServiceImport) as the MCS API module ships
// them; the hub installs both.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	export, err := decodeCRD(mcscrd.ServiceExportCRD)
	if err != nil {
		return nil, err
	}
	imp, err := serviceImportCRD()
	if err != nil {
		return nil, err
	}
	return []*apiextensionsv1.CustomResourceDefinition{export, imp}, nil
}

// serviceImportCRD is what a consumer needs before its first ServiceImport: it travels in the consumer Work.
func serviceImportCRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	return decodeCRD(mcscrd.ServiceImportCRD)
}

// consumerServiceImportCRD is the ServiceImport CRD as consumers get it: without the status subresource. In
// a consumer the status (the KEP's status.clusters) is the hub's, and it travels with the spec in the consumer
// Work, which the executor applies as one object: with a status subresource the consumer's API server would
// drop it.
func consumerServiceImportCRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	crd, err := serviceImportCRD()
	if err != nil {
		return nil, err
	}
	for i := range crd.Spec.Versions {
		if s := crd.Spec.Versions[i].Subresources; s != nil {
			s.Status = nil
			if s.Scale == nil {
				crd.Spec.Versions[i].Subresources = nil
			}
		}
	}
	return crd, nil
}

func decodeCRD(data []byte) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, crd); err != nil {
		return nil, fmt.Errorf("multi-cluster services CRD: %w", err)
	}
	crd.APIVersion, crd.Kind = apiextensionsv1.SchemeGroupVersion.String(), "CustomResourceDefinition"
	return crd, nil
}
