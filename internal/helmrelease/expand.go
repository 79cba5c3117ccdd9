// Package helmrelease renders a HelmRelease (apps.flotilla.io) into the objects its chart makes for one
// cluster. The binding controller calls it (binding.Expander) after the cluster's overrides changed the
// release, and the cluster's Work gets the chart's objects in place of the release.
//
// The hub only renders templates: it runs no hook and no test, talks to no member, and reads nothing but the
// chart (from its repository or a ConfigMap) and the cluster's reported version and APIs. So:
//   - hooks (helm.sh/hook, tests included) are left out, as `helm template --no-hooks` does;
//   - the chart's crds/ are not installed, as `helm install --skip-crds`: a HelmRelease is namespaced, and a
//     namespaced template places objects only in its namespace (the executor's rule, so that a namespace's
//     users reach nothing else through a chart). Install CRDs as cluster-scoped templates; a chart whose
//     templates/ make cluster-scoped objects (or objects in another namespace) does not render, and
//     Rendered=False names them;
//   - .Release.Name and .Release.Namespace are the release's name and namespace; .Release.Revision
//     is 1 and .Release.IsInstall true for every render (the hub keeps no Helm release history);
//   - .Capabilities.KubeVersion is the version the cluster reports (Cluster status.kubernetesVersion), Helm's
//     default when it has reported none, and .Capabilities.APIVersions Helm's defaults plus what the cluster
//     reports serving.
package helmrelease

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/flotilla-io/flotilla/api/apps/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/helmchart"
)

// Expander renders HelmReleases for clusters.
type Expander struct {
	// Client reads the releases' ConfigMaps and the clusters' reported versions on the hub.
	Client client.Reader
	// Mapper says which kinds are namespaced; a kind it does not know is taken as namespaced.
	Mapper meta.RESTMapper
	// Fetcher fetches charts from repositories.
	Fetcher *Fetcher
}

// Expand renders release, as overridden for cluster, into its chart's objects, each labelled with the release
// and carrying the release's annotations (the template generation the Work reports). An error says why the
// chart could not be fetched or rendered, in Helm's words.
func (e *Expander) Expand(ctx context.Context, release *unstructured.Unstructured, cluster string) ([]*unstructured.Unstructured, error) {
	hr := &appsv1alpha1.HelmRelease{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(release.Object, hr); err != nil {
		return nil, fmt.Errorf("decoding the release: %w", err)
	}
	c, err := e.load(ctx, hr)
	if err != nil {
		return nil, err
	}
	values := map[string]any{}
	if hr.Spec.Values != nil && len(hr.Spec.Values.Raw) > 0 {
		if err := json.Unmarshal(hr.Spec.Values.Raw, &values); err != nil {
			return nil, fmt.Errorf("values: %w", err)
		}
	}
	caps, err := e.capabilities(ctx, cluster)
	if err != nil {
		return nil, err
	}
	namespace := TargetNamespace(hr)
	objs, err := helmchart.RenderWith(c, hr.Name, namespace, values, caps)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{
		appsv1alpha1.LabelRelease: hr.Name, appsv1alpha1.LabelReleaseNamespace: hr.Namespace,
		appsv1alpha1.LabelChart: c.Name(), appsv1alpha1.LabelChartVersion: strings.ReplaceAll(c.Metadata.Version, "+", "_"),
	}
	var outside []string
	for _, o := range objs {
		namespaced := e.namespaced(o)
		if o.GetNamespace() == "" && namespaced {
			o.SetNamespace(namespace)
		}
		if !namespaced {
			outside = append(outside, fmt.Sprintf("%s %s (cluster-scoped)", o.GetKind(), o.GetName()))
		} else if o.GetNamespace() != hr.Namespace {
			outside = append(outside, fmt.Sprintf("%s %s (namespace %s)", o.GetKind(), o.GetName(), o.GetNamespace()))
		}
		l := o.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		for k, v := range labels {
			l[k] = v
		}
		o.SetLabels(l)
		a := o.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		for k, v := range release.GetAnnotations() {
			a[k] = v
		}
		a[workv1alpha1.AnnotationExpandedVersion] = c.Metadata.Version
		o.SetAnnotations(a)
	}
	if len(outside) > 0 {
		return nil, fmt.Errorf("chart %s %s makes objects outside the release's namespace %s, where a namespaced template places them all: %s",
			c.Name(), c.Metadata.Version, hr.Namespace, strings.Join(outside, ", "))
	}
	return objs, nil
}

// TargetNamespace is the namespace the release installs into in a member.
func TargetNamespace(hr *appsv1alpha1.HelmRelease) string {
	if hr.Spec.TargetNamespace != "" {
		return hr.Spec.TargetNamespace
	}
	return hr.Namespace
}

// load returns the release's chart, from its repository or its ConfigMap, and checks its version.
func (e *Expander) load(ctx context.Context, hr *appsv1alpha1.HelmRelease) (*chart.Chart, error) {
	var archive []byte
	source := ""
	switch {
	case hr.Spec.ConfigMapRef != nil:
		ref := hr.Spec.ConfigMapRef
		key := ref.Key
		if key == "" {
			key = "chart.tgz"
		}
		source = fmt.Sprintf("ConfigMap %s key %s", ref.Name, key)
		cm := &corev1.ConfigMap{}
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: hr.Namespace, Name: ref.Name}, cm); err != nil {
			return nil, fmt.Errorf("reading %s: %w", source, err)
		}
		if archive = cm.BinaryData[key]; len(archive) == 0 {
			return nil, fmt.Errorf("%s: no binaryData of that key", source)
		}
	case hr.Spec.Repo != "":
		source = fmt.Sprintf("chart %s %s of %s", hr.Spec.Chart, hr.Spec.Version, hr.Spec.Repo)
		var err error
		if archive, err = e.Fetcher.Fetch(ctx, hr.Spec.Repo, hr.Spec.Chart, hr.Spec.Version); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("no chart source")
	}
	c, err := loader.LoadArchive(strings.NewReader(string(archive)))
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", source, err)
	}
	if v := hr.Spec.Version; v != "" && strings.TrimPrefix(c.Metadata.Version, "v") != strings.TrimPrefix(v, "v") {
		return nil, fmt.Errorf("%s holds chart %s version %s, not %s", source, c.Name(), c.Metadata.Version, v)
	}
	return c, nil
}

// capabilities are Helm's defaults with the cluster's reported Kubernetes version and APIs.
func (e *Expander) capabilities(ctx context.Context, cluster string) (*common.Capabilities, error) {
	caps := common.DefaultCapabilities.Copy()
	c := &clusterv1alpha1.Cluster{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: cluster}, c); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if v := c.Status.KubernetesVersion; v != "" {
		if kv, err := common.ParseKubeVersion(v); err == nil {
			caps.KubeVersion = *kv
		}
	}
	for _, a := range c.Status.APIEnablements {
		caps.APIVersions = append(caps.APIVersions, a.GroupVersion)
		for _, r := range a.Resources {
			caps.APIVersions = append(caps.APIVersions, a.GroupVersion+"/"+r.Kind)
		}
	}
	return caps, nil
}

// namespaced says whether o's kind is namespaced, as far as the hub knows it.
func (e *Expander) namespaced(o *unstructured.Unstructured) bool {
	if e.Mapper == nil {
		return true
	}
	gvk := o.GroupVersionKind()
	m, err := e.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return true
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace
}
