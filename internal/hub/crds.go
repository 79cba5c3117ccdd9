package hub

import (
	"context"
	"fmt"
	"io/fs"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsv1client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/api/crds"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/mcs"
)

// CRDs returns the CustomResourceDefinitions embedded in the binary: Flotilla's, the Multi-Cluster Services
// API's, with karmada those of Karmada's groups the hub serves, and with ocm those of OCM's add-on, cluster and
// work groups.
func CRDs(karmada, ocm bool) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	out, err := readCRDs(crds.FS, "*.yaml")
	if err != nil {
		return nil, err
	}
	if karmada {
		peers, err := readCRDs(crds.Karmada, "karmada/*.yaml")
		if err != nil {
			return nil, err
		}
		out = append(out, peers...)
	}
	if ocm {
		peers, err := readCRDs(crds.OCM, "ocm/*.yaml")
		if err != nil {
			return nil, err
		}
		out = append(out, peers...)
	}
	services, err := mcs.CRDs()
	if err != nil {
		return nil, err
	}
	return append(out, services...), nil
}

// readCRDs reads the CRDs in the files of fsys that match pattern.
func readCRDs(fsys fs.FS, pattern string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, err
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(files))
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("embedded CRD %s: %w", f, err)
		}
		crd.APIVersion, crd.Kind = apiextensionsv1.SchemeGroupVersion.String(), "CustomResourceDefinition"
		out = append(out, crd)
	}
	return out, nil
}

// InstallCRDs installs or upgrades Flotilla's CRDs (with karmada, Karmada's groups' too; with ocm, OCM's
// add-on group's) and waits until every one is Established, so objects of every kind can be created as soon
// as it returns. Turning karmada or ocm off removes nothing: a CRD deleted would take its objects with it.
func InstallCRDs(ctx context.Context, cfg *rest.Config, karmada, ocm bool) error {
	want, err := CRDs(karmada, ocm)
	if err != nil {
		return err
	}
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crdClient := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range want {
		if err := putCRD(ctx, crdClient, crd); err != nil {
			return fmt.Errorf("installing CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range want {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := crdClient.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			return established(got), nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s did not become Established: %w", crd.Name, err)
		}
	}
	return nil
}

// putCRD creates the CRD or replaces the spec of the one in the cluster. Replacing (not applying) makes the
// embedded definition win over any edit, whoever made it: the binary's API is the API.
func putCRD(ctx context.Context, crdClient apiextensionsv1client.CustomResourceDefinitionInterface, want *apiextensionsv1.CustomResourceDefinition) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := crdClient.Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = crdClient.Create(ctx, want, metav1.CreateOptions{FieldManager: workv1alpha1.FieldManager})
			return err
		}
		if err != nil {
			return err
		}
		if equality.Semantic.DeepEqual(got.Spec, want.Spec) {
			return nil
		}
		got.Spec = want.Spec
		_, err = crdClient.Update(ctx, got, metav1.UpdateOptions{FieldManager: workv1alpha1.FieldManager})
		return err
	})
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return c.ObservedGeneration == 0 || c.ObservedGeneration >= crd.Generation
		}
	}
	return false
}
