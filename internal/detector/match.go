package detector

import "github.com/flotilla-io/flotilla/internal/selection"

// Policy is a PropagationPolicy or ClusterPropagationPolicy, seen the same way; which one claims a template is
// selection.Choose's decision, which `flotilla diff` makes too.
type Policy = selection.Propagation
