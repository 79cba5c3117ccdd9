// Package charts holds the Helm charts of the hub (flotilla) and of the agent (flotilla-agent), embedded so
// that `flotilla join --install` installs exactly the objects the agent chart renders.
package charts

import "embed"

// FS holds the charts' directories.
//
//go:embed all:flotilla all:flotilla-agent
var FS embed.FS

// Names of the charts in FS.
const (
	Hub   = "flotilla"
	Agent = "flotilla-agent"
)
