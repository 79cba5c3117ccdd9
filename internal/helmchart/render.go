// Package helmchart renders Flotilla's Helm charts (embedded in the binary from charts/) with the Helm SDK and
// installs the agent chart's objects into a member cluster, so that `flotilla join --install` and `helm
// install` create the same objects from one source.
package helmchart

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/charts"
)

// Load returns the embedded chart name (charts.Hub or charts.Agent).
func Load(name string) (*chart.Chart, error) {
	var files []*archive.BufferedFile
	err := fs.WalkDir(charts.FS, name, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(charts.FS, p)
		if err != nil {
			return err
		}
		files = append(files, &archive.BufferedFile{Name: strings.TrimPrefix(p, name+"/"), Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return loader.LoadFiles(files)
}

// Render renders chart c as `helm install RELEASE --namespace NAMESPACE` would with values, and returns its
// objects in Helm's install order (namespaced objects without a namespace get NAMESPACE).
func Render(c *chart.Chart, release, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	return RenderWith(c, release, namespace, values, common.DefaultCapabilities)
}

// RenderWith is Render against caps (.Capabilities: the Kubernetes version and APIs the chart's templates
// see). Hooks (tests included) are left out, as `helm template --no-hooks` does; the chart's crds/ are not
// rendered (Helm installs them apart, see CRDs).
func RenderWith(c *chart.Chart, release, namespace string, values map[string]any, caps *common.Capabilities) ([]*unstructured.Unstructured, error) {
	rendered, err := renderFiles(c, release, namespace, values, caps)
	if err != nil {
		return nil, err
	}
	manifests := map[string]string{}
	for name, content := range rendered {
		if path.Ext(name) == ".yaml" && strings.TrimSpace(content) != "" {
			manifests[name] = content
		}
	}
	_, sorted, err := releaseutil.SortManifests(manifests, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", c.Name(), err)
	}
	var objs []*unstructured.Unstructured
	for _, m := range sorted {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(m.Content), &obj.Object); err != nil {
			return nil, fmt.Errorf("chart %s, %s: %w", c.Name(), m.Name, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// Notes renders chart c's NOTES.txt, what `helm install` prints after installing it.
func Notes(c *chart.Chart, release, namespace string, values map[string]any) (string, error) {
	rendered, err := renderFiles(c, release, namespace, values, common.DefaultCapabilities)
	if err != nil {
		return "", err
	}
	notes, ok := rendered[path.Join(c.Name(), "templates", "NOTES.txt")]
	if !ok {
		return "", fmt.Errorf("chart %s has no templates/NOTES.txt", c.Name())
	}
	return notes, nil
}

// renderFiles renders every template of c as `helm install RELEASE --namespace NAMESPACE` would with values,
// by file name (CHART/templates/FILE), against caps. Helm's defaults (common.DefaultCapabilities) are not a
// member's: Kubernetes at the client-go version linked here (1.37), or 1.20 under go test; the chart's
// kubeVersion is not checked.
func renderFiles(c *chart.Chart, release, namespace string, values map[string]any, caps *common.Capabilities) (map[string]string, error) {
	vals, err := chartutil.ToRenderValues(c, values,
		common.ReleaseOptions{Name: release, Namespace: namespace, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return nil, err
	}
	rendered, err := engine.Render(c, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s: %w", c.Name(), err)
	}
	return rendered, nil
}
