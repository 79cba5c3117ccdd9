package v1alpha1

import (
	"fmt"
	"hash/fnv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The names Flotilla gives the objects it derives from a template, computed here so that any program (the
// hub's controllers, the CLI, tools outside Go that port these few lines) finds a template's binding and
// Works without asking a controller. The cluster namespaces the Works live in are named by
// clusterv1alpha1.ClusterNamespace.

// BindingName is the name of the binding of the template of group and kind gk named name:
// NAME-KIND for the core and apps groups and NAME-KIND-HASH for every other group, so two kinds (or two
// groups' kinds) of one name never share a binding. It is a ResourceBinding in the template's namespace, or a
// ClusterResourceBinding for a cluster-scoped template.
//
// The binding's name is also the value of the LabelBindingName label of its Works, so it must be a valid
// label value as well as an object name: a longer name (or one with characters a binding cannot have, such as
// the colons of system:controller:... ClusterRoles) is cut and ends in a hash of the whole, the same every
// time.
func BindingName(gk schema.GroupKind, name string) string {
	n := name + "-" + strings.ToLower(gk.Kind)
	if gk.Group != "" && gk.Group != "apps" {
		h := fnv.New32a()
		h.Write([]byte(gk.Group))
		n = fmt.Sprintf("%s-%08x", n, h.Sum32())
	}
	if len(validation.IsDNS1123Subdomain(n)) == 0 && len(validation.IsValidLabelValue(n)) == 0 {
		return n
	}
	h := fnv.New64a()
	h.Write([]byte(n))
	suffix := fmt.Sprintf("%016x", h.Sum64())
	// Only lower-case letters, digits and dashes: a cut could otherwise end a dot-separated part with a
	// dash, which no object name may have.
	prefix := strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r - 'A' + 'a'
		}
		return '-'
	}, n)
	prefix = strings.Trim(prefix[:min(len(prefix), validation.LabelValueMaxLength-len(suffix)-1)], "-")
	if prefix == "" {
		return suffix
	}
	return prefix + "-" + suffix
}

// WorkName is the name of a binding's Work in every cluster namespace: NAMESPACE.NAME for the
// ResourceBinding bindingName in bindingNamespace (dots never occur in namespaces, so two bindings never
// share a Work), bindingName alone for a ClusterResourceBinding (bindingNamespace empty). The Work's
// LabelBindingNamespace and LabelBindingName labels name the binding too.
func WorkName(bindingNamespace, bindingName string) string {
	if bindingNamespace == "" {
		return bindingName
	}
	return bindingNamespace + "." + bindingName
}
