package interpreter

import (
	lua "github.com/yuin/gopher-lua"
)

// Karmada's kube helper library for scripts, answering with Flotilla's built-in rules for pod specs:
//
//	kube.accuratePodRequirements(podTemplate) -> {resourceRequest = {cpu = "300m", ...}, nodeClaim = {...}}
//	kube.getPodDependencies(podTemplate, namespace) -> {{apiVersion = "v1", kind = "ConfigMap", namespace = ..., name = ...}, ...}
func openKube(L *lua.LState, o *observedPaths) {
	kube := L.NewTable()
	kube.RawSetString("accuratePodRequirements", L.NewFunction(func(L *lua.LState) int {
		spec := podTemplateSpec(L, o)
		out := map[string]any{}
		if requests := podSpecRequests(spec); requests != nil {
			list := map[string]any{}
			for name, q := range requests {
				list[string(name)] = q.String()
			}
			out["resourceRequest"] = list
		}
		claim := map[string]any{}
		for _, f := range []string{"nodeSelector", "tolerations"} {
			if v, ok := spec[f]; ok {
				claim[f] = v
			}
		}
		if affinity, ok := spec["affinity"].(map[string]any); ok {
			if node, ok := affinity["nodeAffinity"].(map[string]any); ok && node["requiredDuringSchedulingIgnoredDuringExecution"] != nil {
				claim["hardNodeAffinity"] = node["requiredDuringSchedulingIgnoredDuringExecution"]
			}
		}
		if len(claim) > 0 {
			out["nodeClaim"] = claim
		}
		if v, ok := spec["priorityClassName"]; ok {
			out["priorityClassName"] = v
		}
		return pushJSON(L, out, o)
	}))
	kube.RawSetString("getPodDependencies", L.NewFunction(func(L *lua.LState) int {
		spec, namespace := podTemplateSpec(L, o), L.OptString(2, "")
		out := []any{}
		for _, d := range podSpecDependencies(spec) {
			out = append(out, map[string]any{"apiVersion": "v1", "kind": d.Kind, "namespace": namespace, "name": d.Name})
		}
		return pushJSON(L, out, o)
	}))
	L.SetGlobal("kube", kube)
}

// podTemplateSpec reads the first argument, a pod template, and returns its spec as JSON. o knows which
// tables were lists, so that an empty one is read back as a list.
func podTemplateSpec(L *lua.LState, o *observedPaths) map[string]any {
	template, err := fromLua(L.CheckTable(1), "podTemplate", o, 0)
	if err != nil {
		L.ArgError(1, err.Error())
	}
	m, _ := template.(map[string]any)
	spec, _ := m["spec"].(map[string]any)
	return spec
}

func pushJSON(L *lua.LState, v any, o *observedPaths) int {
	lv, err := toLua(L, v, o, 0)
	if err != nil {
		L.RaiseError("%v", err)
	}
	L.Push(lv)
	return 1
}
