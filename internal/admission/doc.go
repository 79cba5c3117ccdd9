// Package admission holds every admission rule of the hub, so that a rule of a Flotilla kind has one home
// and runs the same way whether the hub embeds its API server or adopts an existing cluster
// (`flotilla hub --kubeconfig`).
//
// Two kinds of rule live here:
//
//   - ValidatingAdmissionPolicies (CEL), objects the hub installs on every start (policies.go,
//     clusterpolicy.go): override values and the paths an override may not reach (flotilla-override-values),
//     what an agent may change of its Works (flotilla-agent-works), who may change a Cluster's credential
//     fields and which endpoints it may have (flotilla-cluster-credentials), who may bind a ClusterSet to a
//     namespace (flotilla-clusterset-bind, with the CEL authorizer: create on clustersets/bind), that the
//     built-in sets keep their selectors (flotilla-clusterset-builtins), who may write an OCM
//     ManifestWorkReplicaSet (flotilla-manifestworkreplicaset-writers: create on manifestworks in every
//     namespace), and a warning for the older purge mode names (flotilla-purge-mode-names). Any API server enforces them, embedded or not.
//   - Checks in Go, for what CEL cannot do (check.go): that a propagation policy's statePreservation
//     jsonPaths parse (policy.go), that a ClusterSet's labelSelector is one (clusterset.go), that an
//     InterpreterCustomization's CEL expressions compile and its Lua scripts load (customization.go), that an
//     InterpreterWebhookConfiguration's webhooks can be called over HTTPS and its rules name known
//     operations (interpreterwebhook.go), and a
//     warning, never a refusal, when a namespaced policy names a cluster its namespace's ClusterSetBindings
//     do not grant (grant.go; it reads bindings, sets and Clusters through the API server's loopback
//     client, or the webhook's), that a FederatedResourceQuota's static assignments stay within its overall
//     and its quantities are not negative, and that a workload's create, update or scale (the scale
//     subresource too) does not take its namespace over a FederatedResourceQuota's overall (quota.go; Admit
//     reads the namespace's quotas and bindings the same way, and a read that fails refuses). The embedded
//     hub's kube-apiserver runs them in process, as admission
//     plugins (Check.Plugin); a hub over an existing cluster serves them as a validating webhook
//     (webhook.go) that the cluster's API server calls, with failurePolicy Fail. One Validate function
//     serves both, and the refusal carries the same message (the webhook's is prefixed by the API server
//     with the webhook's name).
//
// One limit needs the embedded API server and has no counterpart over an existing cluster: events are
// rate-limited per namespace by kube-apiserver's EventRateLimit plugin (EventRateLimit). There the cluster's
// administrator sets such limits.
package admission
