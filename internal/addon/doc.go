// Package addon runs the hub's side of add-ons (api/addon/v1alpha1): extensions that declare once what they
// install in each cluster, where, with which configuration, and what their agents may do on the hub.
//
// Two controllers share the work, one writer per field. The add-on controller (addon_controller.go), per
// AddOn, enables the add-on on the clusters its Placements decide on (strategy.go: ClusterAddOns labelled
// installed-by, deleted only where no settled placement decides any more), renders the template for each
// enabled cluster into one Work per cluster (render.go: the install Namespace first, the variables, the
// AddOnConfig chosen by cluster, placement or default in config.go, registries and node placement), and
// rolls a change out by each placement's rollout strategy with internal/rollout's Plan (rollout.go): a
// cluster the rollout has not reached keeps its Work. It reports the rendering on each ClusterAddOn
// (namespace, revision, configs, Degraded, Progressing) and the whole on the AddOn (status.go). The
// ClusterAddOn controller (clusteraddon_controller.go) gives each ClusterAddOn its finalizer, grants the
// add-on's agent its hub permissions as RoleBindings (registration.go), judges health from the Work or a
// Lease (Available), and on deletion deletes the RBAC and the Work and waits for the Work to be gone. The
// agent identities (certificates) are the registration package's; the admission rules are in
// internal/admission (addon.go).
package addon
