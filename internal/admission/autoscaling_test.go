package admission

const (
	fhpaHead = "apiVersion: autoscaling.flotilla.io/v1alpha1\nkind: FederatedHPA\nmetadata: {name: web, namespace: default}\nspec:\n" +
		"  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n"
	cronHead = "apiVersion: autoscaling.flotilla.io/v1alpha1\nkind: CronFederatedHPA\nmetadata: {name: web, namespace: default}\nspec:\n" +
		"  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n"
	cronOfFHPA = "apiVersion: autoscaling.flotilla.io/v1alpha1\nkind: CronFederatedHPA\nmetadata: {name: web, namespace: default}\nspec:\n" +
		"  scaleTargetRef: {apiVersion: autoscaling.flotilla.io/v1alpha1, kind: FederatedHPA, name: web}\n"
	fhpaCPU = "  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}]\n"
)

// The autoscaling kinds' cases join the table of TestPluginAndWebhookAgree: every field the schema cannot
// hold alone, accepted when right and refused, by name, when wrong.
func init() {
	const fhpas, crons = "federatedhpas.autoscaling.flotilla.io", "cronfederatedhpas.autoscaling.flotilla.io"
	reviews = append(reviews, []struct {
		name        string
		resource    string
		subresource string
		manifest    string
		want        []string
	}{
		{"federatedhpa by cpu", fhpas, "", fhpaHead + "  minReplicas: 2\n  maxReplicas: 10\n" + fhpaCPU +
			"  behavior:\n    scaleDown: {stabilizationWindowSeconds: 60, policies: [{type: Percent, value: 50, periodSeconds: 30}]}\n", nil},
		{"federatedhpa by a pods metric and a container's memory", fhpas, "", fhpaHead + "  maxReplicas: 10\n" +
			"  metrics:\n  - {type: Pods, pods: {metric: {name: requests_per_second}, target: {type: AverageValue, averageValue: '10'}}}\n" +
			"  - {type: ContainerResource, containerResource: {name: memory, container: app, target: {type: AverageValue, averageValue: 100Mi}}}\n", nil},
		{"federatedhpa whose minReplicas is above maxReplicas", fhpas, "", fhpaHead + "  minReplicas: 5\n  maxReplicas: 3\n",
			[]string{"spec.minReplicas", "must not be greater than maxReplicas (3)"}},
		{"federatedhpa without the target's apiVersion", fhpas, "",
			"apiVersion: autoscaling.flotilla.io/v1alpha1\nkind: FederatedHPA\nmetadata: {name: web, namespace: default}\nspec:\n  scaleTargetRef: {kind: Deployment, name: web}\n  maxReplicas: 3\n",
			[]string{"spec.scaleTargetRef.apiVersion: Required value"}},
		{"federatedhpa whose target apiVersion does not parse", fhpas, "",
			"apiVersion: autoscaling.flotilla.io/v1alpha1\nkind: FederatedHPA\nmetadata: {name: web, namespace: default}\nspec:\n  scaleTargetRef: {apiVersion: a/b/c, kind: Deployment, name: web}\n  maxReplicas: 3\n",
			[]string{"spec.scaleTargetRef.apiVersion"}},
		{"federatedhpa of a federatedhpa", fhpas, "",
			"apiVersion: autoscaling.flotilla.io/v1alpha1\nkind: FederatedHPA\nmetadata: {name: web, namespace: default}\nspec:\n  scaleTargetRef: {apiVersion: autoscaling.flotilla.io/v1alpha1, kind: FederatedHPA, name: other}\n  maxReplicas: 3\n",
			[]string{"spec.scaleTargetRef.kind", "not another FederatedHPA"}},
		{"federatedhpa with an External metric", fhpas, "", fhpaHead + "  maxReplicas: 3\n  metrics: [{type: External, external: {metric: {name: queue}, target: {type: Value, value: '1'}}}]\n",
			[]string{"spec.metrics[0].type: Unsupported value: \"External\""}},
		{"federatedhpa with a Resource metric without resource", fhpas, "", fhpaHead + "  maxReplicas: 3\n  metrics: [{type: Resource}]\n",
			[]string{"spec.metrics[0].resource: Required value"}},
		{"federatedhpa with a zero utilization", fhpas, "", fhpaHead + "  maxReplicas: 3\n  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 0}}}]\n",
			[]string{"spec.metrics[0].resource.target.averageUtilization"}},
		{"federatedhpa with a Value target on a resource", fhpas, "", fhpaHead + "  maxReplicas: 3\n  metrics: [{type: Resource, resource: {name: cpu, target: {type: Value, value: '1'}}}]\n",
			[]string{"spec.metrics[0].resource.target.type: Unsupported value: \"Value\""}},
		{"federatedhpa with a container metric without container", fhpas, "", fhpaHead + "  maxReplicas: 3\n  metrics: [{type: ContainerResource, containerResource: {name: cpu, container: '', target: {type: Utilization, averageUtilization: 50}}}]\n",
			[]string{"spec.metrics[0].containerResource.container: Required value"}},
		{"federatedhpa with a pods metric of type Utilization", fhpas, "", fhpaHead + "  maxReplicas: 3\n  metrics: [{type: Pods, pods: {metric: {name: rps}, target: {type: Utilization, averageUtilization: 50}}}]\n",
			[]string{"spec.metrics[0].pods.target", "AverageValue"}},
		{"federatedhpa with a pods metric selector that is not one", fhpas, "", fhpaHead + "  maxReplicas: 3\n  metrics: [{type: Pods, pods: {metric: {name: rps, selector: {matchExpressions: [{key: a, operator: Within, values: [b]}]}}, target: {type: AverageValue, averageValue: '1'}}}]\n",
			[]string{"spec.metrics[0].pods.metric.selector"}},
		{"federatedhpa whose behavior window is too long", fhpas, "", fhpaHead + "  maxReplicas: 3\n  behavior: {scaleUp: {stabilizationWindowSeconds: 4000}}\n",
			[]string{"spec.behavior.scaleUp.stabilizationWindowSeconds", "between 0 and 3600"}},
		{"federatedhpa whose behavior policy is wrong", fhpas, "", fhpaHead + "  maxReplicas: 3\n  behavior: {scaleDown: {selectPolicy: Most, policies: [{type: Replicas, value: 0, periodSeconds: 2000}]}}\n",
			[]string{"spec.behavior.scaleDown.selectPolicy", "spec.behavior.scaleDown.policies[0].type", "spec.behavior.scaleDown.policies[0].value", "spec.behavior.scaleDown.policies[0].periodSeconds"}},
		{"federatedhpa whose behavior has an empty policy list", fhpas, "", fhpaHead + "  maxReplicas: 3\n  behavior: {scaleUp: {policies: []}}\n",
			[]string{"spec.behavior.scaleUp.policies: Required value"}},
		{"federatedhpa whose tolerance is negative", fhpas, "", fhpaHead + "  maxReplicas: 3\n  behavior: {scaleUp: {tolerance: '-0.1'}}\n",
			[]string{"spec.behavior.scaleUp.tolerance"}},

		{"cron of a deployment", crons, "", cronHead + "  rules: [{name: morning, schedule: '0 8 * * 1-5', targetReplicas: 5, timeZone: Europe/Paris}]\n", nil},
		{"cron of a deployment by descriptor", crons, "", cronHead + "  rules: [{name: hourly, schedule: '@hourly', targetReplicas: 1}]\n", nil},
		{"cron of a federatedhpa", crons, "", cronOfFHPA + "  rules: [{name: peak, schedule: '*/5 * * * *', targetMinReplicas: 3, targetMaxReplicas: 9}]\n", nil},
		{"cron whose schedule does not parse", crons, "", cronHead + "  rules: [{name: bad, schedule: '61 * * * *', targetReplicas: 1}]\n",
			[]string{"spec.rules[0].schedule", "61 * * * *"}},
		{"cron whose schedule has six fields", crons, "", cronHead + "  rules: [{name: bad, schedule: '0 0 8 * * *', targetReplicas: 1}]\n",
			[]string{"spec.rules[0].schedule"}},
		{"cron whose schedule names a zone", crons, "", cronHead + "  rules: [{name: bad, schedule: 'CRON_TZ=Asia/Tokyo 0 8 * * *', targetReplicas: 1}]\n",
			[]string{"spec.rules[0].schedule", "set timeZone instead"}},
		{"cron in an unknown time zone", crons, "", cronHead + "  rules: [{name: bad, schedule: '0 8 * * *', timeZone: Mars/Olympus, targetReplicas: 1}]\n",
			[]string{"spec.rules[0].timeZone", `unknown time zone "Mars/Olympus"`}},
		{"cron of a deployment without targetReplicas", crons, "", cronHead + "  rules: [{name: r, schedule: '@daily', targetMaxReplicas: 3}]\n",
			[]string{"spec.rules[0].targetReplicas: Required value", "spec.rules[0].targetMinReplicas: Forbidden"}},
		{"cron of a federatedhpa with targetReplicas", crons, "", cronOfFHPA + "  rules: [{name: r, schedule: '@daily', targetReplicas: 3}]\n",
			[]string{"spec.rules[0].targetReplicas: Forbidden", "spec.rules[0].targetMinReplicas: Required value"}},
		{"cron of a federatedhpa whose min is above its max", crons, "", cronOfFHPA + "  rules: [{name: r, schedule: '@daily', targetMinReplicas: 5, targetMaxReplicas: 2}]\n",
			[]string{"spec.rules[0].targetMinReplicas", "must not be greater than targetMaxReplicas (2)"}},
		{"cron without the target's apiVersion", crons, "",
			"apiVersion: autoscaling.flotilla.io/v1alpha1\nkind: CronFederatedHPA\nmetadata: {name: web, namespace: default}\nspec:\n  scaleTargetRef: {kind: Deployment, name: web}\n  rules: [{name: r, schedule: '@daily', targetReplicas: 1}]\n",
			[]string{"spec.scaleTargetRef.apiVersion: Required value"}},
	}...)
}
