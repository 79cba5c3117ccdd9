// Package install says what installing the agent into a member means: the agent chart's values a join sets,
// where its release goes and the labels that find it again. It links no Helm code, so flotilla-agent can share
// the join command; internal/helmchart renders and applies the chart.
package install

import (
	"time"

	"github.com/flotilla-io/flotilla/charts"
)

const (
	// DefaultAgentRelease and DefaultAgentNamespace are where `flotilla join --install` puts the agent.
	DefaultAgentRelease   = "flotilla-agent"
	DefaultAgentNamespace = "flotilla-system"
	// FieldManager owns the fields of the objects `flotilla join --install` applies.
	FieldManager = "flotilla-install"
)

// AgentValues are the agent chart's values that `flotilla join --install` sets.
type AgentValues struct {
	HubURL       string
	CACertHashes []string
	ClusterName  string
	Token        string
	Labels       string
	Provider     string
	Region       string
	Zones        []string
	CertTTL      time.Duration
	// Image is the agent image, repository:tag; empty keeps the chart's default.
	Image string
}

// Values are v as the agent chart's values.
func (v AgentValues) Values() map[string]any {
	zones := []any{}
	for _, z := range v.Zones {
		zones = append(zones, z)
	}
	hashes := []any{}
	for _, h := range v.CACertHashes {
		hashes = append(hashes, h)
	}
	vals := map[string]any{
		"hub":            map[string]any{"url": v.HubURL, "caCertHashes": hashes},
		"clusterName":    v.ClusterName,
		"bootstrapToken": map[string]any{"value": v.Token},
		"labels":         v.Labels, "provider": v.Provider, "region": v.Region, "zones": zones,
		"certTTL": v.CertTTL.String(),
	}
	if v.Image != "" {
		repo, tag := splitImage(v.Image)
		vals["image"] = map[string]any{"repository": repo, "tag": tag}
	}
	return vals
}

// splitImage splits repository:tag; a colon before the last slash belongs to a registry's port.
func splitImage(image string) (string, string) {
	for i := len(image) - 1; i >= 0 && image[i] != '/'; i-- {
		if image[i] == ':' {
			return image[:i], image[i+1:]
		}
	}
	return image, ""
}

// ReleaseLabels are the labels every object of the agent chart's release carries.
func ReleaseLabels(release string) map[string]string {
	return map[string]string{"app.kubernetes.io/name": charts.Agent, "app.kubernetes.io/instance": release}
}
