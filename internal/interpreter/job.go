package interpreter

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// A Job's replicas are its parallelism. Divided over clusters, each cluster must also get its share of the
// Job's completions: with the template's completions in every cluster, a Job asking for 6 completions and
// divided 1/2/3 would run 18.

// Divisible says whether a template can be divided over several clusters; the error says why not. An
// Indexed Job cannot: every cluster would run the indexes from 0 up, and the API has no way to give a
// cluster its own range of indexes.
func Divisible(obj *unstructured.Unstructured) error {
	if obj.GroupVersionKind().GroupKind() != jobKind {
		return nil
	}
	if mode, _, _ := unstructured.NestedString(obj.Object, "spec", "completionMode"); mode == "Indexed" {
		return fmt.Errorf("the Indexed Job %s cannot be divided over clusters: each cluster would run every index from 0; "+
			"place it on one cluster (Duplicated, or Divided with a spread constraint of at most one cluster)", obj.GetName())
	}
	return nil
}

// ShareCompletions gives a divided Job's manifest for one cluster its share of the template's completions,
// in proportion to its share of the parallelism; the shares of all the clusters of the division add up to
// the template's completions. Clusters are taken in the division's order, each given
// floor(C·through/P) − floor(C·before/P), where before and through are the parallelism of the clusters
// before it and up to it. Kinds other than non-Indexed Jobs with completions are left alone.
func ShareCompletions(obj *unstructured.Unstructured, cluster string, division []workv1alpha1.TargetCluster) {
	if obj.GroupVersionKind().GroupKind() != jobKind || Divisible(obj) != nil {
		return
	}
	completions, found, _ := unstructured.NestedInt64(obj.Object, "spec", "completions")
	if !found {
		return // a work queue: it is done when any pod succeeds, there is nothing to share
	}
	weight := func(t workv1alpha1.TargetCluster) int64 { return int64(t.Replicas) }
	var total int64
	for _, t := range division {
		total += weight(t)
	}
	if total == 0 { // no parallelism anywhere (a paused Job): share by cluster
		weight = func(workv1alpha1.TargetCluster) int64 { return 1 }
		total = int64(len(division))
	}
	var before int64
	for _, t := range division {
		through := before + weight(t)
		if t.Name == cluster {
			share := completions*through/total - completions*before/total
			_ = unstructured.SetNestedField(obj.Object, share, "spec", "completions")
			return
		}
		before = through
	}
}
