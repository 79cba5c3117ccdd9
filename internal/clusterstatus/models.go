package clusterstatus

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// nodeGroups summarises the free capacity of a member's nodes as resource models: the nodes that may take
// pods (ready, not cordoned) grouped by their labels (but kubernetes.io/hostname), their NoSchedule and
// NoExecute taints and the extended resources they have, and within a group counted per grade of models
// with the least free amount of each resource over the grade's nodes. used holds the requests of each node's
// non-terminated pods. Past clusterv1alpha1.MaxNodeGroups groups, the smallest are merged (mergeGroups). The
// result is sorted, so the same nodes always give the same status.
func nodeGroups(models []clusterv1alpha1.ResourceModel, nodes []corev1.Node, used map[string]corev1.ResourceList) []clusterv1alpha1.NodeGroup {
	if len(models) == 0 {
		models = clusterv1alpha1.DefaultResourceModels()
	}
	type key struct{ labels, taints, extended string }
	groups := map[key]*clusterv1alpha1.NodeGroup{}
	var order []key
	for i := range nodes {
		n := &nodes[i]
		if !nodeReady(n) || n.Spec.Unschedulable {
			continue
		}
		free := freeOn(n, used[n.Name])
		labels := maps.Clone(n.Labels)
		delete(labels, corev1.LabelHostname)
		taints := slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t corev1.Taint) bool {
			return t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute
		})
		for j := range taints {
			taints[j].TimeAdded = nil
		}
		slices.SortFunc(taints, compareTaints)
		k := key{labels: joinMap(labels), taints: joinTaints(taints), extended: extendedNames(n.Status.Allocatable)}
		g := groups[k]
		if g == nil {
			g = &clusterv1alpha1.NodeGroup{Labels: labels, Taints: taints}
			groups[k] = g
			order = append(order, k)
		}
		addToGrade(g, gradeOf(models, free), free)
	}
	out := make([]clusterv1alpha1.NodeGroup, 0, len(order))
	for _, k := range order {
		out = append(out, *groups[k])
	}
	out = mergeGroups(out, clusterv1alpha1.MaxNodeGroups)
	for i := range out {
		slices.SortFunc(out[i].Grades, func(a, b clusterv1alpha1.NodeGrade) int { return cmp.Compare(a.Grade, b.Grade) })
	}
	slices.SortFunc(out, func(a, b clusterv1alpha1.NodeGroup) int {
		return cmp.Or(strings.Compare(joinMap(a.Labels), joinMap(b.Labels)), strings.Compare(joinTaints(a.Taints), joinTaints(b.Taints)),
			strings.Compare(extendedNames(firstFree(a)), extendedNames(firstFree(b))))
	})
	return out
}

// freeOn is a node's allocatable minus what its pods request, never below zero, pods counted as a resource.
func freeOn(n *corev1.Node, used corev1.ResourceList) corev1.ResourceList {
	free := corev1.ResourceList{}
	for name, q := range n.Status.Allocatable {
		q = q.DeepCopy()
		q.Sub(used[name])
		if q.Sign() < 0 {
			q = resource.Quantity{}
		}
		free[name] = q
	}
	return free
}

// gradeOf is the lowest grade any resource of the models puts free in: the grade whose range holds the
// resource's free amount, or the last grade when it exceeds them all. A resource the node lacks is zero.
func gradeOf(models []clusterv1alpha1.ResourceModel, free corev1.ResourceList) int32 {
	grade := models[len(models)-1].Grade
	for _, r := range models[0].Ranges {
		q := free[r.Name]
		for _, m := range models {
			i := slices.IndexFunc(m.Ranges, func(x clusterv1alpha1.ResourceModelRange) bool { return x.Name == r.Name })
			if i >= 0 && q.Cmp(m.Ranges[i].Max) < 0 {
				grade = min(grade, m.Grade)
				break
			}
		}
	}
	return grade
}

// addToGrade counts a node with free capacity in a group's grade, keeping the grade's least free amounts.
func addToGrade(g *clusterv1alpha1.NodeGroup, grade int32, free corev1.ResourceList) {
	i := slices.IndexFunc(g.Grades, func(x clusterv1alpha1.NodeGrade) bool { return x.Grade == grade })
	if i < 0 {
		g.Grades = append(g.Grades, clusterv1alpha1.NodeGrade{Grade: grade, Count: 1, Free: free})
		return
	}
	g.Grades[i].Count++
	g.Grades[i].Free = leastOf(g.Grades[i].Free, free)
}

// leastOf is, per resource, the smaller of a and b; a resource missing from either is missing (zero).
func leastOf(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, qa := range a {
		if qb, ok := b[name]; ok {
			if qb.Cmp(qa) < 0 {
				qa = qb
			}
			out[name] = qa
		}
	}
	return out
}

// mergeGroups keeps at most limit groups: the limit-1 with the most nodes stay, the rest become one group
// with the labels they all share and every taint any has, its grades merged. The merged group never promises
// more than its nodes have: a selector it matches matches each of them, and a pod tolerating its taints
// tolerates each node's.
func mergeGroups(groups []clusterv1alpha1.NodeGroup, limit int) []clusterv1alpha1.NodeGroup {
	if len(groups) <= limit {
		return groups
	}
	count := func(g clusterv1alpha1.NodeGroup) (n int32) {
		for _, x := range g.Grades {
			n += x.Count
		}
		return n
	}
	slices.SortStableFunc(groups, func(a, b clusterv1alpha1.NodeGroup) int { return cmp.Compare(count(b), count(a)) })
	merged := groups[limit-1]
	merged.Grades = slices.Clone(merged.Grades)
	for _, g := range groups[limit:] {
		for k, v := range merged.Labels {
			if g.Labels[k] != v {
				delete(merged.Labels, k)
			}
		}
		for _, t := range g.Taints {
			if !slices.ContainsFunc(merged.Taints, func(x corev1.Taint) bool { return x.MatchTaint(&t) && x.Value == t.Value }) {
				merged.Taints = append(merged.Taints, t)
			}
		}
		for _, x := range g.Grades {
			if i := slices.IndexFunc(merged.Grades, func(y clusterv1alpha1.NodeGrade) bool { return y.Grade == x.Grade }); i >= 0 {
				merged.Grades[i].Count += x.Count
				merged.Grades[i].Free = leastOf(merged.Grades[i].Free, x.Free)
			} else {
				merged.Grades = append(merged.Grades, x)
			}
		}
	}
	slices.SortFunc(merged.Taints, compareTaints)
	return append(groups[:limit-1], merged)
}

func compareTaints(a, b corev1.Taint) int {
	return cmp.Or(strings.Compare(a.Key, b.Key), strings.Compare(a.Value, b.Value), strings.Compare(string(a.Effect), string(b.Effect)))
}

func joinMap(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(k + "=" + m[k] + "\x00")
	}
	return b.String()
}

func joinTaints(ts []corev1.Taint) string {
	var b strings.Builder
	for _, t := range ts {
		b.WriteString(t.Key + "=" + t.Value + ":" + string(t.Effect) + "\x00")
	}
	return b.String()
}

// extendedNames names the resources of l beyond CPU, memory, pods and storage that it has some of, sorted.
func extendedNames(l corev1.ResourceList) string {
	var names []string
	for name, q := range l {
		switch name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage, corev1.ResourceStorage:
			continue
		}
		if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) || q.IsZero() {
			continue
		}
		names = append(names, string(name))
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

func firstFree(g clusterv1alpha1.NodeGroup) corev1.ResourceList {
	if len(g.Grades) == 0 {
		return nil
	}
	return g.Grades[0].Free
}
