package integration

import (
	"context"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const selector = "  resourceSelectors:\n    - apiVersion: apps/v1\n      kind: Deployment\n"

// frq is a FederatedResourceQuota in the default namespace with spec.
func frq(spec string) string {
	return "apiVersion: policy.flotilla.io/v1alpha1\nkind: FederatedResourceQuota\nmetadata:\n  name: x\n  namespace: default\nspec:\n" + spec
}

// TestInvalidObjectsRejected submits bad objects of every kind and checks that admission rejects each with a
// message that names the field and the rule.
func TestInvalidObjectsRejected(t *testing.T) {
	pp := func(spec string) string { return policy("PropagationPolicy", selector+spec) }
	op := func(overriders string) string {
		return policy("OverridePolicy", "  overrideRules:\n    - overriders:\n"+overriders)
	}
	cluster := func(spec string) string {
		return "apiVersion: cluster.flotilla.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: x\nspec:\n" + spec
	}
	tests := []struct {
		name string
		obj  string
		want []string // every substring must appear in the error
	}{
		{"policy without resourceSelectors", policy("PropagationPolicy", "  priority: 1\n"),
			[]string{"spec.resourceSelectors: Required value"}},
		{"policy with empty resourceSelectors", policy("PropagationPolicy", "  resourceSelectors: []\n"),
			[]string{"spec.resourceSelectors", "should have at least 1 items"}},
		{"selector without apiVersion", policy("PropagationPolicy", "  resourceSelectors:\n    - kind: Deployment\n"),
			[]string{"spec.resourceSelectors[0].apiVersion: Required value"}},
		{"selector without kind", policy("PropagationPolicy", "  resourceSelectors:\n    - apiVersion: v1\n"),
			[]string{"spec.resourceSelectors[0].kind: Required value"}},
		{"clusterAffinity with clusterAffinities",
			pp("  placement:\n    clusterAffinity:\n      clusterNames: [a]\n    clusterAffinities:\n      - affinityName: g\n        clusterNames: [b]\n"),
			[]string{"spec.placement", "clusterAffinity and placement.clusterAffinities are mutually exclusive"}},
		{"clusterAffinities with a repeated name",
			pp("  placement:\n    clusterAffinities:\n      - affinityName: g\n      - affinityName: g\n"),
			[]string{"spec.placement.clusterAffinities", "affinityName must be unique"}},
		{"clusterAffinities without a name",
			pp("  placement:\n    clusterAffinities:\n      - clusterNames: [a]\n"),
			[]string{"spec.placement.clusterAffinities[0].affinityName: Required value"}},
		{"static weight 0",
			pp("  placement:\n    replicaScheduling:\n      weightPreference:\n        staticWeightList:\n          - targetCluster: {clusterNames: [a]}\n            weight: 0\n"),
			[]string{"spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight", "greater than or equal to 1"}},
		// Replicas (an int32) times a weight must stay within the scheduler's int64 (MaxStaticWeight).
		{"static weight past an int32",
			pp("  placement:\n    replicaScheduling:\n      weightPreference:\n        staticWeightList:\n          - targetCluster: {clusterNames: [a]}\n            weight: 2147483648\n"),
			[]string{"spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight", "less than or equal to 2147483647"}},
		{"static weight of the largest int64",
			pp("  placement:\n    replicaScheduling:\n      weightPreference:\n        staticWeightList:\n          - targetCluster: {clusterNames: [a]}\n            weight: 9223372036854775807\n"),
			// It arrives as a float (9.223372036854776e+18), so the bound reads 2.147483647e+09.
			[]string{"spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight", "less than or equal to 2.147483647e+09"}},
		{"unknown dynamicWeight",
			pp("  placement:\n    replicaScheduling:\n      weightPreference:\n        dynamicWeight: FreeMemory\n"),
			[]string{"spec.placement.replicaScheduling.weightPreference.dynamicWeight", `Unsupported value: "FreeMemory"`, `"AvailableReplicas"`}},
		{"weightPreference with Duplicated",
			pp("  placement:\n    replicaScheduling:\n      replicaSchedulingType: Duplicated\n      weightPreference:\n        dynamicWeight: AvailableReplicas\n"),
			[]string{"spec.placement.replicaScheduling", "weightPreference is allowed only when replicaSchedulingType is Divided"}},
		{"unknown replicaSchedulingType",
			pp("  placement:\n    replicaScheduling:\n      replicaSchedulingType: Split\n"),
			[]string{"spec.placement.replicaScheduling.replicaSchedulingType", `Unsupported value: "Split"`}},
		{"unknown replicaDivisionPreference",
			pp("  placement:\n    replicaScheduling:\n      replicaDivisionPreference: Even\n"),
			[]string{"spec.placement.replicaScheduling.replicaDivisionPreference", `Unsupported value: "Even"`}},
		{"spread by region without a spread by cluster",
			pp("  placement:\n    spreadConstraints:\n      - spreadByField: region\n        minGroups: 2\n"),
			[]string{"spec.placement.spreadConstraints", "a spread by region, zone or provider requires a spread by cluster too"}},
		{"two group spreads",
			pp("  placement:\n    spreadConstraints:\n      - spreadByField: cluster\n      - spreadByField: region\n      - spreadByLabel: team\n"),
			[]string{"spec.placement.spreadConstraints", "at most one spread by region, zone, provider or label"}},
		{"two spreads by cluster, one of them implicit",
			pp("  placement:\n    spreadConstraints:\n      - spreadByField: cluster\n      - maxGroups: 2\n"),
			[]string{"spec.placement.spreadConstraints", "at most one spread by cluster"}},
		{"spread field twice",
			pp("  placement:\n    spreadConstraints:\n      - spreadByField: cluster\n      - spreadByField: cluster\n"),
			[]string{"spec.placement.spreadConstraints", "each spreadByField may appear only once"}},
		{"maxGroups below minGroups",
			pp("  placement:\n    spreadConstraints:\n      - spreadByField: cluster\n        minGroups: 3\n        maxGroups: 2\n"),
			[]string{"spec.placement.spreadConstraints[0]", "maxGroups must be greater than or equal to minGroups"}},
		{"spreadByField with spreadByLabel",
			pp("  placement:\n    spreadConstraints:\n      - spreadByField: cluster\n        spreadByLabel: team\n"),
			[]string{"spec.placement.spreadConstraints[0]", "spreadByField and spreadByLabel are mutually exclusive"}},
		{"unknown spreadByField",
			pp("  placement:\n    spreadConstraints:\n      - spreadByField: country\n"),
			[]string{"spec.placement.spreadConstraints[0].spreadByField", `Unsupported value: "country"`}},
		{"fieldSelector on an unknown key",
			pp("  placement:\n    clusterAffinity:\n      fieldSelector:\n        matchExpressions:\n          - {key: country, operator: In, values: [fr]}\n"),
			[]string{"spec.placement.clusterAffinity.fieldSelector.matchExpressions", "fieldSelector keys must be provider, region or zone"}},
		{"fieldSelector with Exists",
			pp("  placement:\n    clusterAffinity:\n      fieldSelector:\n        matchExpressions:\n          - {key: region, operator: Exists}\n"),
			[]string{"spec.placement.clusterAffinity.fieldSelector.matchExpressions", "fieldSelector operators must be In or NotIn"}},
		{"suspension dispatching with dispatchingOnClusters",
			pp("  suspension:\n    dispatching: true\n    dispatchingOnClusters:\n      clusterNames: [a]\n"),
			[]string{"spec.suspension", "suspension.dispatching and suspension.dispatchingOnClusters are mutually exclusive"}},
		{"unknown preemption", pp("  preemption: Sometimes\n"),
			[]string{"spec.preemption", `Unsupported value: "Sometimes"`, `"Always", "Never"`}},
		{"unknown conflictResolution", pp("  conflictResolution: Merge\n"),
			[]string{"spec.conflictResolution", `Unsupported value: "Merge"`, `"Abort", "Overwrite"`}},
		{"gracePeriodSeconds with purgeMode Directly",
			pp("  failover:\n    application:\n      decisionConditions: {tolerationSeconds: 60}\n      purgeMode: Directly\n      gracePeriodSeconds: 30\n"),
			[]string{"spec.failover.application", "gracePeriodSeconds is allowed only when purgeMode is Gracefully"}},
		{"negative tolerationSeconds",
			pp("  failover:\n    application:\n      decisionConditions: {tolerationSeconds: -1}\n"),
			[]string{"spec.failover.application.decisionConditions.tolerationSeconds", "greater than or equal to 0"}},
		{"statePreservation jsonPath that does not parse",
			pp("  failover:\n    application:\n      decisionConditions: {tolerationSeconds: 60}\n      statePreservation:\n        rules: [{aliasLabelName: checkpoint, jsonPath: '{.checkpoint'}]\n"),
			[]string{"spec.failover.application.statePreservation.rules[0].jsonPath", "not a JSONPath client-go can read"}},
		{"cluster statePreservation with a label name that is not one",
			policy("ClusterPropagationPolicy", "  resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]\n  failover:\n    cluster:\n      statePreservation:\n        rules: [{aliasLabelName: 'not a label', jsonPath: '{.phase}'}]\n"),
			[]string{"spec.failover.cluster.statePreservation.rules[0].aliasLabelName"}},
		{"unknown priorityClassSource",
			pp("  schedulePriority:\n    priorityClassSource: Annotation\n    priorityClassName: high\n"),
			[]string{"spec.schedulePriority.priorityClassSource", `Unsupported value: "Annotation"`}},
		{"schedulePriority without priorityClassName",
			pp("  schedulePriority:\n    priorityClassSource: KubePriorityClass\n"),
			[]string{"spec.schedulePriority.priorityClassName", "Required value"}},
		{"schedulePriority naming a PriorityClass by a name no object can have",
			pp("  schedulePriority:\n    priorityClassSource: KubePriorityClass\n    priorityClassName: High_Priority\n"),
			[]string{"spec.schedulePriority.priorityClassName", "should match"}},
		{"cluster policy with clusterAffinity and clusterAffinities",
			policy("ClusterPropagationPolicy", selector+"  placement:\n    clusterAffinity: {}\n    clusterAffinities:\n      - affinityName: g\n"),
			[]string{"spec.placement", "mutually exclusive"}},
		{"unknown image overrider operator",
			op("        imageOverrider:\n          - {component: Tag, operator: upsert, value: v2}\n"),
			[]string{"spec.overrideRules[0].overriders.imageOverrider[0].operator", `Unsupported value: "upsert"`, `"add", "remove", "replace"`}},
		{"unknown image component",
			op("        imageOverrider:\n          - {component: Digest, operator: replace, value: sha256}\n"),
			[]string{"spec.overrideRules[0].overriders.imageOverrider[0].component", `Unsupported value: "Digest"`}},
		{"plaintext replace without a value",
			op("        plaintext:\n          - {path: /spec/replicas, operator: replace}\n"),
			[]string{"spec.overrideRules[].overriders.plaintext[].value: Required value", "value is required for add and replace"}},
		{"fieldOverrider yaml add without a value",
			op("        fieldOverrider:\n          - fieldPath: /data/x\n            yaml: [{subPath: /a, operator: add}]\n"),
			[]string{"fieldOverrider[].json[]/yaml[].value: Required value", "value is required for add and replace"}},
		{"plaintext path that is not a JSON pointer",
			op("        plaintext:\n          - {path: spec/replicas, operator: replace, value: 2}\n"),
			[]string{"spec.overrideRules[0].overriders.plaintext[0].path", "should match"}},
		{"plaintext path with a bad escape",
			op("        plaintext:\n          - {path: /metadata/labels/a~2b, operator: remove}\n"),
			[]string{"spec.overrideRules[0].overriders.plaintext[0].path", "should match"}},
		{"command overrider with replace",
			op("        commandOverrider:\n          - {containerName: web, operator: replace, value: [a]}\n"),
			[]string{"spec.overrideRules[0].overriders.commandOverrider[0].operator", `Unsupported value: "replace"`, `"add", "remove"`}},
		{"args overrider without containerName",
			op("        argsOverrider:\n          - {operator: add, value: [a]}\n"),
			[]string{"spec.overrideRules[0].overriders.argsOverrider[0].containerName: Required value"}},
		{"field overrider with json and yaml",
			op("        fieldOverrider:\n          - fieldPath: /data/x\n            json: [{subPath: /a, operator: remove}]\n            yaml: [{subPath: /a, operator: remove}]\n"),
			[]string{"spec.overrideRules[0].overriders.fieldOverrider[0]", "fieldOverrider json and yaml are mutually exclusive"}},
		{"field overrider without operations",
			op("        fieldOverrider:\n          - fieldPath: /data/x\n"),
			[]string{"spec.overrideRules[0].overriders.fieldOverrider[0]", "fieldOverrider needs json or yaml operations"}},
		{"cluster override policy with an unknown labels operator",
			policy("ClusterOverridePolicy", "  overrideRules:\n    - overriders:\n        labelsOverrider:\n          - {operator: merge, value: {a: b}}\n"),
			[]string{"spec.overrideRules[0].overriders.labelsOverrider[0].operator", `Unsupported value: "merge"`}},
		{"plaintext override of metadata.name",
			op("        plaintext:\n          - {path: /metadata/name, operator: replace, value: kube-proxy}\n"),
			[]string{"spec.overrideRules[].overriders.plaintext[].path: Forbidden", "may not change apiVersion, kind, metadata.name or metadata.namespace"}},
		{"plaintext removal of metadata.namespace",
			op("        plaintext:\n          - {path: /metadata/namespace, operator: remove}\n"),
			[]string{"spec.overrideRules[].overriders.plaintext[].path: Forbidden"}},
		{"plaintext override of the whole metadata",
			op("        plaintext:\n          - {path: /metadata, operator: replace, value: {name: x}}\n"),
			[]string{"spec.overrideRules[].overriders.plaintext[].path: Forbidden", "nor metadata as a whole"}},
		{"plaintext override of kind",
			op("        plaintext:\n          - {path: /kind, operator: replace, value: DaemonSet}\n"),
			[]string{"spec.overrideRules[].overriders.plaintext[].path: Forbidden"}},
		{"plaintext override of apiVersion",
			policy("ClusterOverridePolicy", "  overrideRules:\n    - overriders:\n        plaintext:\n          - {path: /apiVersion, operator: replace, value: v1}\n"),
			[]string{"spec.overrideRules[].overriders.plaintext[].path: Forbidden"}},
		{"plaintext override below metadata.name",
			op("        plaintext:\n          - {path: /metadata/name/0, operator: add, value: x}\n"),
			[]string{"spec.overrideRules[].overriders.plaintext[].path: Forbidden"}},
		{"field overrider of metadata.name",
			op("        fieldOverrider:\n          - fieldPath: /metadata/name\n            yaml: [{subPath: /a, operator: remove}]\n"),
			[]string{"spec.overrideRules[].overriders.fieldOverrider[].fieldPath: Forbidden"}},
		{"image overrider with a path to metadata.namespace",
			op("        imageOverrider:\n          - {predicate: {path: /metadata/namespace}, component: Repository, operator: replace, value: kube-system}\n"),
			[]string{"spec.overrideRules[].overriders.imageOverrider[].predicate.path: Forbidden"}},
		{"cluster with an unknown syncMode", cluster("  syncMode: Both\n"),
			[]string{"spec.syncMode", `Unsupported value: "Both"`, `"Push", "Pull"`}},
		{"push cluster without apiEndpoint", cluster("  syncMode: Push\n  secretRef: {namespace: flotilla-system, name: x}\n"),
			[]string{"spec", "spec.apiEndpoint is required when syncMode is Push"}},
		{"push cluster with a secretRef outside flotilla-system",
			cluster("  syncMode: Push\n  apiEndpoint: https://m1:6443\n  secretRef: {namespace: default, name: x}\n"),
			[]string{"spec.secretRef", "secretRef must name a Secret in flotilla-system"}},
		{"cluster with a bad taint effect",
			cluster("  syncMode: Pull\n  taints:\n    - {key: a, effect: NoWay}\n"),
			[]string{"spec.taints", "taint effect must be one of NoSchedule, PreferNoSchedule, NoExecute"}},
		{"cluster with a non-http apiEndpoint", cluster("  syncMode: Pull\n  apiEndpoint: ftp://member1\n"),
			[]string{"spec.apiEndpoint", "should match"}},
		{"cluster with a name too long for its namespace",
			"apiVersion: cluster.flotilla.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: " + strings.Repeat("n", 47) + "\nspec:\n  syncMode: Pull\n",
			[]string{"a cluster name is at most 46 characters: flotilla-cluster-<name> must be a valid namespace name"}},
		{"binding with negative replicas",
			"apiVersion: work.flotilla.io/v1alpha1\nkind: ResourceBinding\nmetadata: {name: x, namespace: default}\nspec:\n  resource: {apiVersion: apps/v1, kind: Deployment, name: web}\n  replicas: -1\n",
			[]string{"spec.replicas", "greater than or equal to 0"}},
		{"work without spec",
			"apiVersion: work.flotilla.io/v1alpha1\nkind: Work\nmetadata: {name: x, namespace: default}\n",
			[]string{"spec: Required value"}},
		{"work with an unknown update strategy", work("  manifestConfigs: [{resourceIdentifier: {resource: configmaps, name: a}, updateStrategy: {type: Replace}}]\n"),
			[]string{"spec.manifestConfigs[0].updateStrategy.type", `Unsupported value: "Replace"`}},
		{"work with serverSideApply on another strategy", work("  manifestConfigs: [{resourceIdentifier: {resource: configmaps, name: a}, updateStrategy: {type: Update, serverSideApply: {force: true}}}]\n"),
			[]string{"spec.manifestConfigs[0].updateStrategy", "serverSideApply is only for type ServerSideApply"}},
		{"work applying as another tool", work("  manifestConfigs: [{resourceIdentifier: {resource: configmaps, name: a}, updateStrategy: {type: ServerSideApply, serverSideApply: {fieldManager: kubectl}}}]\n"),
			[]string{"spec.manifestConfigs[0].updateStrategy.serverSideApply.fieldManager", "should match"}},
		{"work applying as the executor's retained manager", work("  manifestConfigs: [{resourceIdentifier: {resource: configmaps, name: a}, updateStrategy: {type: ServerSideApply, serverSideApply: {fieldManager: flotilla-retained}}}]\n"),
			[]string{"spec.manifestConfigs[0].updateStrategy.serverSideApply.fieldManager", "flotilla-retained is the executor's own field manager"}},
		{"work with JSONPaths feedback without paths", work("  manifestConfigs: [{resourceIdentifier: {resource: configmaps, name: a}, feedbackRules: [{type: JSONPaths}]}]\n"),
			[]string{"spec.manifestConfigs[0].feedbackRules[0]", "a JSONPaths rule needs jsonPaths"}},
		{"work orphaning by rules without SelectivelyOrphan", work("  deleteOption: {propagationPolicy: Orphan, orphaningRules: [{resource: configmaps, name: a}]}\n"),
			[]string{"spec.deleteOption", "orphaningRules are only for propagationPolicy SelectivelyOrphan"}},
		{"unknown purgeMode", pp("  failover:\n    cluster: {purgeMode: Softly}\n"),
			[]string{"spec.failover.cluster.purgeMode", `Unsupported value: "Softly"`, `"Graciously"`}},
		{"rebalancer naming nothing", rebalancer("  ttlSecondsAfterFinished: 10\n"),
			[]string{"spec", "name at least one workload or give a selector"}},
		{"rebalancer with a negative TTL",
			rebalancer("  workloads: [{apiVersion: apps/v1, kind: Deployment, namespace: default, name: web}]\n  ttlSecondsAfterFinished: -1\n"),
			[]string{"spec.ttlSecondsAfterFinished", "greater than or equal to 0"}},
		{"rebalancer workload without a name",
			rebalancer("  workloads: [{apiVersion: apps/v1, kind: Deployment, namespace: default}]\n"),
			[]string{"spec.workloads[0].name: Required value"}},
		{"rebalancer selector without labelSelector",
			rebalancer("  selector: {apiVersion: apps/v1, kind: Deployment}\n"),
			[]string{"spec.selector.labelSelector: Required value"}},
		{"customization with an expression that does not parse",
			customization("    healthInterpretation: {cel: 'object.status.ready >='}\n"),
			[]string{"spec.customizations.healthInterpretation.cel", "ERROR: <input>:1:"}},
		{"customization whose health is not a bool",
			customization("    healthInterpretation: {cel: 'size(object.spec)'}\n"),
			[]string{"spec.customizations.healthInterpretation.cel", "healthInterpretation must return bool"}},
		{"customization reading another operation's variable",
			customization("    replicaResource: {cel: '{\"replicas\": replicas}'}\n"),
			[]string{"spec.customizations.replicaResource.cel", "undeclared reference to 'replicas'"}},
		{"customization with a Lua script that does not parse",
			customization("    healthInterpretation:\n      luaScript: |\n        function InterpretHealth(observedObj)\n          return observedObj.status. >= 1\n        end\n"),
			[]string{"spec.customizations.healthInterpretation.luaScript", "luaScript line:2"}},
		{"customization with a Lua script without the operation's function",
			customization("    healthInterpretation: {luaScript: 'function GetReplicas(obj) return 1 end'}\n"),
			[]string{"spec.customizations.healthInterpretation.luaScript", "does not define function InterpretHealth"}},
		// The top level runs at admission within the evaluation's time limit, the pattern matcher included.
		{"customization whose Lua top level matches a backtracking pattern",
			customization("    healthInterpretation:\n      luaScript: |\n        local trimmed = string.match(\"x\"..(\" \"):rep(200000)..\"y\", \"^%s*(.-)%s*$\")\n" +
				"        function InterpretHealth(observedObj)\n          return true\n        end\n"),
			[]string{"spec.customizations.healthInterpretation.luaScript", "string.match: the pattern was still matching at the evaluation's time limit"}},
		{"customization with both cel and luaScript",
			customization("    healthInterpretation: {cel: 'true', luaScript: 'function InterpretHealth(o) return true end'}\n"),
			[]string{"spec.customizations.healthInterpretation", "exactly one of cel and luaScript must be set"}},
		{"customization with neither cel nor luaScript",
			customization("    healthInterpretation: {}\n"),
			[]string{"spec.customizations.healthInterpretation", "exactly one of cel and luaScript must be set"}},
		{"cluster set with an unknown selectorType", clusterSet("  clusterSelector: {selectorType: Exclusive}\n"),
			[]string{"spec.clusterSelector.selectorType", `Unsupported value: "Exclusive"`, `"ExclusiveClusterSetLabel"`}},
		{"exclusive cluster set with a labelSelector", clusterSet("  clusterSelector: {selectorType: ExclusiveClusterSetLabel, labelSelector: {}}\n"),
			[]string{"spec.clusterSelector", "labelSelector is only for selectorType LabelSelector"}},
		{"cluster set whose selector does not parse",
			clusterSet("  clusterSelector:\n    selectorType: LabelSelector\n    labelSelector: {matchExpressions: [{key: tier, operator: Within, values: [gold]}]}\n"),
			[]string{"spec.clusterSelector.labelSelector.matchExpressions[0].operator", `Invalid value: "Within": not a valid selector operator`}},
		{"cluster set binding named after another set",
			"apiVersion: cluster.flotilla.io/v1alpha1\nkind: ClusterSetBinding\nmetadata: {name: prod, namespace: default}\nspec: {clusterSet: dev}\n",
			[]string{"metadata.name must equal spec.clusterSet"}},
		{"built-in set default with a label selector", "apiVersion: cluster.flotilla.io/v1alpha1\nkind: ClusterSet\nmetadata: {name: default}\n" +
			"spec:\n  clusterSelector: {selectorType: LabelSelector, labelSelector: {matchLabels: {a: b}}}\n",
			[]string{"the built-in ClusterSet default", "its selector cannot change"}},
		{"customization without a target kind",
			"apiVersion: config.flotilla.io/v1alpha1\nkind: InterpreterCustomization\nmetadata:\n  name: x\nspec:\n  target: {apiVersion: example.io/v1}\n  customizations: {}\n",
			[]string{"spec.target.kind: Required value"}},
		{"quota with a negative overall", frq("  overall: {cpu: -1}\n"),
			[]string{"spec.overall", "a quota is never negative"}},
		{"quota with a negative static assignment", frq("  overall: {cpu: 2}\n  staticAssignments:\n    - {clusterName: member1, hard: {memory: -1Gi}}\n"),
			[]string{"spec.staticAssignments[0].hard", "a quota is never negative"}},
		{"static assignment over overall", frq("  overall: {cpu: 2}\n  staticAssignments:\n    - {clusterName: member1, hard: {cpu: 3}}\n"),
			[]string{"spec.staticAssignments[0].hard[cpu]", "cluster member1 may not have more cpu than the overall 2"}},
		{"two assignments for one cluster", frq("  overall: {cpu: 2}\n  staticAssignments:\n    - {clusterName: m1, hard: {cpu: 1}}\n    - {clusterName: m1, hard: {cpu: 1}}\n"),
			[]string{"spec.staticAssignments[1]: Duplicate value", "m1"}},
		{"quota without overall", frq("  staticAssignments: []\n"),
			[]string{"spec.overall: Required value"}},
		{"placement with clustersPerDecisionGroup abc", placement("  decisionStrategy:\n    groupStrategy:\n      clustersPerDecisionGroup: abc\n"),
			[]string{"spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup", `"abc" is not a group size`}},
		{"placement with clustersPerDecisionGroup \"0\"", placement("  decisionStrategy:\n    groupStrategy:\n      clustersPerDecisionGroup: \"0\"\n"),
			[]string{"spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup", "percentage from 1% to 100%"}},
		{"placement with clustersPerDecisionGroup 0", placement("  decisionStrategy:\n    groupStrategy:\n      clustersPerDecisionGroup: 0\n"),
			[]string{"spec.decisionStrategy.groupStrategy.clustersPerDecisionGroup", "want at least 1"}},
		{"placement with an unknown score", placement("  prioritizerPolicy:\n    configurations:\n      - scoreCoordinate: {builtIn: Cheapest}\n"),
			[]string{"spec.prioritizerPolicy.configurations[0].scoreCoordinate.builtIn", "Cheapest"}},
		{"placement with negative numberOfClusters", placement("  numberOfClusters: -1\n"),
			[]string{"spec.numberOfClusters", "greater than or equal to 0"}},
		{"placement with duplicate decision groups", placement("  decisionStrategy:\n    groupStrategy:\n      decisionGroups:\n        - groupName: a\n        - groupName: a\n"),
			[]string{"spec.decisionStrategy.groupStrategy.decisionGroups[1].groupName: Duplicate value"}},
		{"placement with an unparsable group selector", placement("  decisionStrategy:\n    groupStrategy:\n      decisionGroups:\n        - groupName: a\n          groupClusterSelector:\n            labelSelector:\n              matchExpressions: [{key: env, operator: Near}]\n"),
			[]string{"spec.decisionStrategy.groupStrategy.decisionGroups[0].groupClusterSelector.labelSelector.matchExpressions[0].operator", "Near"}},
		{"placement with an expression that does not compile", placement("  predicates:\n    - requiredClusterSelector:\n        celSelector:\n          celExpressions: ['true', 'cluster.metadata.name ==']\n"),
			[]string{"spec.predicates[0].requiredClusterSelector.celSelector.celExpressions[1]", "ERROR: <input>:1:"}},
		{"placement with an expression that is not a bool", placement("  predicates:\n    - requiredClusterSelector:\n        celSelector:\n          celExpressions: ['size(cluster.metadata.name)']\n"),
			[]string{"spec.predicates[0].requiredClusterSelector.celSelector.celExpressions[0]", "a predicate must return bool"}},
		{"placement with a negative tolerationSeconds", placement("  tolerations:\n    - {operator: Exists, tolerationSeconds: -5}\n"),
			[]string{"spec.tolerations[0].tolerationSeconds", "must be 0 or more"}},
		{"policy with placementRef and placement", pp("  placementRef: {name: web}\n  placement:\n    clusterAffinity: {clusterNames: [a]}\n"),
			[]string{"spec.placement: Forbidden", "placement and placementRef are mutually exclusive"}},
		{"policy with a placementRef without a name", pp("  placementRef: {}\n"),
			[]string{"spec.placementRef.name: Required value"}},
		{"cluster policy with a placementRef", policy("ClusterPropagationPolicy", selector+"  placementRef: {name: web}\n"),
			[]string{"spec.placementRef: Forbidden", "a ClusterPropagationPolicy cannot follow a Placement"}},
		{"rollout maxConcurrency abc", pp("  rollout:\n    type: Progressive\n    progressive: {maxConcurrency: abc}\n"),
			[]string{"spec.rollout.progressive.maxConcurrency", `"abc" is neither a count nor a percentage from 0% to 100%`}},
		{"rollout maxConcurrency 150%", pp("  rollout:\n    type: Progressive\n    progressive: {maxConcurrency: 150%}\n"),
			[]string{"spec.rollout.progressive.maxConcurrency", `"150%"`}},
		{"rollout maxFailures -1", pp("  rollout:\n    type: Progressive\n    progressive: {maxFailures: -1}\n"),
			[]string{"spec.rollout.progressive.maxFailures", `"-1" is neither a count nor a percentage`}},
		{"rollout clustersPerDecisionGroup 0%", pp("  rollout:\n    type: ProgressivePerGroup\n    clustersPerDecisionGroup: 0%\n"),
			[]string{"spec.rollout.clustersPerDecisionGroup", "percentage from 1% to 100%"}},
		{"rollout mandatory group not defined", pp("  rollout:\n    type: Progressive\n    decisionGroups: [{groupName: canary}]\n    progressive:\n      mandatoryDecisionGroups: [{groupName: early}]\n"),
			[]string{`spec.rollout.progressive.mandatoryDecisionGroups[0].groupName: Not found: "early"`}},
		{"rollout duplicate decision groups", pp("  rollout:\n    type: ProgressivePerGroup\n    decisionGroups: [{groupName: a}, {groupName: a}]\n"),
			[]string{"spec.rollout.decisionGroups[1].groupName: Duplicate value"}},
		{"rollout group selector that does not parse", pp("  rollout:\n    type: ProgressivePerGroup\n    decisionGroups:\n      - groupName: a\n        groupClusterSelector: {labelSelector: {matchExpressions: [{key: env, operator: Near}]}}\n"),
			[]string{"spec.rollout.decisionGroups[0].groupClusterSelector.labelSelector.matchExpressions[0].operator", "Near"}},
		{"rollout progressive with type All", pp("  rollout:\n    type: All\n    progressive: {maxConcurrency: 1}\n"),
			[]string{"spec.rollout.progressive", "progressive applies to type Progressive or ProgressivePerGroup"}},
		{"rollout negative minSuccessTime", pp("  rollout:\n    type: Progressive\n    progressive: {minSuccessTime: -5s}\n"),
			[]string{"spec.rollout.progressive.minSuccessTime", "must not be negative"}},
		{"rollout progressDeadline shorter than minSuccessTime", pp("  rollout:\n    type: Progressive\n    progressive: {minSuccessTime: 1m, progressDeadline: 30s}\n"),
			[]string{"spec.rollout.progressive.progressDeadline", "shorter than minSuccessTime"}},
	}
	if len(tests) < 25 {
		t.Fatalf("only %d invalid objects; the API promises at least 25", len(tests))
	}
	fhpa := func(spec string) string {
		return "apiVersion: autoscaling.flotilla.io/v1alpha1\nkind: FederatedHPA\nmetadata:\n  name: x\n  namespace: default\nspec:\n" +
			"  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n" + spec
	}
	cron := func(rules string) string {
		return "apiVersion: autoscaling.flotilla.io/v1alpha1\nkind: CronFederatedHPA\nmetadata:\n  name: x\n  namespace: default\nspec:\n" +
			"  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  rules:\n" + rules
	}
	tests = append(tests, []struct {
		name string
		obj  string
		want []string
	}{
		{"federatedhpa without maxReplicas", fhpa("  minReplicas: 1\n"), []string{"spec.maxReplicas: Required value"}},
		{"federatedhpa with minReplicas 0", fhpa("  minReplicas: 0\n  maxReplicas: 3\n"), []string{"spec.minReplicas", "greater than or equal to 1"}},
		{"federatedhpa whose minReplicas is above maxReplicas", fhpa("  minReplicas: 4\n  maxReplicas: 3\n"),
			[]string{"spec.minReplicas", "must not be greater than maxReplicas (3)"}},
		{"federatedhpa with an Object metric", fhpa("  maxReplicas: 3\n  metrics: [{type: Object, object: {metric: {name: q}, describedObject: {kind: Service, name: s}, target: {type: Value, value: '1'}}}]\n"),
			[]string{"spec.metrics[0].type: Unsupported value: \"Object\""}},
		{"cronfederatedhpa whose schedule does not parse", cron("    - {name: r, schedule: '0 25 * * *', targetReplicas: 2}\n"),
			[]string{"spec.rules[0].schedule", "0 25 * * *"}},
		{"cronfederatedhpa in an unknown time zone", cron("    - {name: r, schedule: '0 8 * * *', timeZone: Mars/Olympus, targetReplicas: 2}\n"),
			[]string{"spec.rules[0].timeZone", "unknown time zone"}},
		{"cronfederatedhpa with two rules of one name", cron("    - {name: r, schedule: '@daily', targetReplicas: 2}\n    - {name: r, schedule: '@hourly', targetReplicas: 3}\n"),
			[]string{"spec.rules[1]", "Duplicate value"}},
		{"cronfederatedhpa with a history limit over 32", cron("    - {name: r, schedule: '@daily', targetReplicas: 2, successfulHistoryLimit: 33}\n"),
			[]string{"spec.rules[0].successfulHistoryLimit", "less than or equal to 32"}},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := createDryRun(parseObject(t, tt.obj))
			if err == nil {
				t.Fatalf("accepted:\n%s", tt.obj)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not mention %q:\n%v", want, err)
				}
			}
		})
	}
}

func customization(operations string) string {
	return "apiVersion: config.flotilla.io/v1alpha1\nkind: InterpreterCustomization\nmetadata:\n  name: x\nspec:\n" +
		"  target: {apiVersion: example.io/v1, kind: Widget}\n  customizations:\n" + operations
}

func placement(spec string) string {
	return "apiVersion: cluster.flotilla.io/v1alpha1\nkind: Placement\nmetadata:\n  name: x\n  namespace: default\nspec:\n" + spec
}

func clusterSet(spec string) string {
	return "apiVersion: cluster.flotilla.io/v1alpha1\nkind: ClusterSet\nmetadata:\n  name: x\nspec:\n" + spec
}

func work(spec string) string {
	return "apiVersion: work.flotilla.io/v1alpha1\nkind: Work\nmetadata:\n  name: x\n  namespace: default\nspec:\n" + spec
}

func rebalancer(spec string) string {
	return "apiVersion: work.flotilla.io/v1alpha1\nkind: Rebalancer\nmetadata:\n  name: x\nspec:\n" + spec
}

// warnings collects the warnings the API server returns.
type warnings struct {
	mu   sync.Mutex
	text []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.text = append(w.text, text)
}

// TestOlderPurgeModeNamesWarn: Karmada's older purge mode names are accepted, with a warning that names the
// field and the name to write instead; the current names draw no warning.
func TestOlderPurgeModeNamesWarn(t *testing.T) {
	application := func(mode string) string {
		return "  failover:\n    application:\n      decisionConditions: {tolerationSeconds: 60}\n      purgeMode: " + mode + "\n"
	}
	tests := []struct {
		name string
		spec string
		want string // "" for no warning
	}{
		{"cluster Graciously", "  failover:\n    cluster: {purgeMode: Graciously}\n",
			"spec.failover.cluster.purgeMode: Graciously is the older name of Gracefully; write Gracefully"},
		{"cluster Immediately", "  failover:\n    cluster: {purgeMode: Immediately}\n",
			"spec.failover.cluster.purgeMode: Immediately is the older name of Directly; write Directly"},
		{"application Immediately", application("Immediately"),
			"spec.failover.application.purgeMode: Immediately is the older name of Directly; write Directly"},
		{"application Graciously with a grace period", application("Graciously") + "      gracePeriodSeconds: 30\n",
			"spec.failover.application.purgeMode: Graciously is the older name of Gracefully; write Gracefully"},
		{"cluster Gracefully", "  failover:\n    cluster: {purgeMode: Gracefully}\n", ""},
		{"application Directly", application("Directly"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &warnings{}
			cfg := rest.CopyConfig(env.Config)
			cfg.WarningHandler = w
			c, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Create(context.Background(), parseObject(t, policy("PropagationPolicy", selector+tt.spec)), client.DryRunAll); err != nil {
				t.Fatalf("refused: %v", err)
			}
			got := strings.Join(w.text, "\n")
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Fatalf("warnings %q, want %q", got, tt.want)
			}
		})
	}
}

// TestOverridesNextToIdentityAccepted: the identity rule refuses only the identity: labels, annotations and
// fields whose names merely start like an identity field are overridden as before.
func TestOverridesNextToIdentityAccepted(t *testing.T) {
	for _, path := range []string{"/metadata/labels/app", "/metadata/annotations/a~1b", "/metadata/namespaces", "/kinds", "/spec/template/metadata/name"} {
		obj := policy("OverridePolicy", "  overrideRules:\n    - overriders:\n        plaintext:\n          - {path: "+path+", operator: add, value: x}\n")
		if err := createDryRun(parseObject(t, obj)); err != nil {
			t.Errorf("override of %s refused: %v", path, err)
		}
	}
}

// TestLuaCustomizationAccepted: a customization in Karmada's Lua format passes the CRD's one-language rule
// and admission's loading of each script.
func TestLuaCustomizationAccepted(t *testing.T) {
	obj := customization("    replicaResource:\n      luaScript: |\n        function GetReplicas(obj)\n          return obj.spec.replicas, {resourceRequest = {cpu = '1'}}\n        end\n" +
		"    healthInterpretation: {cel: 'true'}\n" +
		"    retention:\n      luaScript: |\n        function Retain(desiredObj, observedObj)\n          desiredObj.spec.paused = observedObj.spec.paused\n          return desiredObj\n        end\n")
	if err := createDryRun(parseObject(t, obj)); err != nil {
		t.Fatalf("refused: %v", err)
	}
}
