package addon

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Works names the ClusterAddOn as the owner of its add-on's Work, for the work sweeper
// (binding.SetupSweeper), which releases Works whose owner is gone.
type Works struct{}

// Kind names the owner kind.
func (Works) Kind() string { return "ClusterAddOn" }

// New returns an empty ClusterAddOn.
func (Works) New() client.Object { return &addonv1alpha1.ClusterAddOn{} }

// Of returns the ClusterAddOn an add-on Work's labels name: the add-on's, in the Work's namespace.
func (Works) Of(w *workv1alpha1.Work) (client.ObjectKey, bool) {
	name := w.Labels[addonv1alpha1.LabelAddOn]
	return client.ObjectKey{Namespace: w.Namespace, Name: name}, name != ""
}

// Labels are the labels of a ClusterAddOn's Work.
func (Works) Labels(owner client.Object) map[string]string {
	return map[string]string{addonv1alpha1.LabelAddOn: owner.GetName()}
}

// Owns says whether a ClusterAddOn claims a Work: the one named after its add-on.
func (Works) Owns(owner client.Object, w *workv1alpha1.Work) bool {
	return w.Name == addonv1alpha1.WorkName(owner.GetName())
}
