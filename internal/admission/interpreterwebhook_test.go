package admission

const webhookHead = "apiVersion: config.flotilla.io/v1alpha1\nkind: InterpreterWebhookConfiguration\nmetadata: {name: workloads}\nwebhooks:\n" +
	"- name: workloads.example.io\n  interpreterContextVersions: [v1alpha1]\n"

// The interpreter webhook configurations' cases join the table of TestPluginAndWebhookAgree: one the hub can
// call, and each way of writing one it could not call or that names what it does not know, refused by field.
func init() {
	const hooks, karmada = "interpreterwebhookconfigurations.config.flotilla.io", "resourceinterpreterwebhookconfigurations.config.karmada.io"
	rules := "  rules: [{operations: [InterpretReplica, InterpretHealth], apiGroups: [example.io], apiVersions: ['*'], kinds: [Workload]}]\n"
	reviews = append(reviews, []struct {
		name        string
		resource    string
		subresource string
		manifest    string
		want        []string
	}{
		{"webhook at an https url", hooks, "", webhookHead + "  clientConfig: {url: 'https://interpreter.example.io:8443/interpret'}\n" + rules, nil},
		{"webhook behind a service", hooks, "", webhookHead + "  clientConfig: {service: {namespace: tools, name: interpreter, port: 8443}}\n" + rules, nil},
		{"karmada's webhook for every operation", karmada, "",
			"apiVersion: config.karmada.io/v1alpha1\nkind: ResourceInterpreterWebhookConfiguration\nmetadata: {name: workloads}\nwebhooks:\n" +
				"- name: workloads.example.io\n  interpreterContextVersions: [v1alpha1]\n  clientConfig: {url: 'https://interpreter.example.io/'}\n" +
				"  rules: [{operations: ['*'], apiGroups: [example.io], apiVersions: [v1alpha1], kinds: [Workload]}]\n", nil},
		{"webhook with neither url nor service", hooks, "", webhookHead + "  clientConfig: {}\n" + rules,
			[]string{"webhooks[0].clientConfig: Required value: a url or a service"}},
		{"webhook at an http url", hooks, "", webhookHead + "  clientConfig: {url: 'http://interpreter.example.io/'}\n" + rules,
			[]string{"webhooks[0].clientConfig.url", "is not https"}},
		{"webhook whose caBundle is not PEM", hooks, "", webhookHead + "  clientConfig: {url: 'https://interpreter.example.io/', caBundle: bm90IGEgY2VydA==}\n" + rules,
			[]string{"webhooks[0].clientConfig.caBundle", "holds no PEM certificate"}},
		{"webhook whose service has no name", hooks, "", webhookHead + "  clientConfig: {service: {namespace: tools}}\n" + rules,
			[]string{"webhooks[0].clientConfig.service.name: Required value"}},
		{"webhook rule with an unknown operation", hooks, "", webhookHead + "  clientConfig: {url: 'https://interpreter.example.io/'}\n" +
			"  rules: [{operations: [InterpretReplicas], apiGroups: [example.io], apiVersions: [v1], kinds: [Workload]}]\n",
			[]string{"webhooks[0].rules[0].operations[0]: Unsupported value: \"InterpretReplicas\""}},
		{"webhook rule with a star beside a kind", hooks, "", webhookHead + "  clientConfig: {url: 'https://interpreter.example.io/'}\n" +
			"  rules: [{operations: [InterpretHealth], apiGroups: [example.io], apiVersions: [v1], kinds: ['*', Workload]}]\n",
			[]string{"webhooks[0].rules[0].kinds", "stands alone in its list"}},
		{"webhook rule without kinds", hooks, "", webhookHead + "  clientConfig: {url: 'https://interpreter.example.io/'}\n" +
			"  rules: [{operations: [InterpretHealth], apiGroups: [example.io], apiVersions: [v1]}]\n",
			[]string{"webhooks[0].rules[0].kinds: Required value"}},
		{"webhook speaking another context version", hooks, "",
			"apiVersion: config.flotilla.io/v1alpha1\nkind: InterpreterWebhookConfiguration\nmetadata: {name: workloads}\nwebhooks:\n" +
				"- name: workloads.example.io\n  interpreterContextVersions: [v2]\n  clientConfig: {url: 'https://interpreter.example.io/'}\n" + rules,
			[]string{"webhooks[0].interpreterContextVersions: Unsupported value"}},
	}...)
}
