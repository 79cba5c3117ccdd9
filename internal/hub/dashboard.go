package hub

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/flotilla-io/flotilla/internal/dashboard"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// The embedded hub serves the dashboard at /dashboard/ on its secure port, mounted in its own
// kube-apiserver (controlplane.Config.Handlers): the API server authenticates the person (client
// certificate or token) and authorizes the path; the dashboard then reads the hub by impersonating that
// person, so hub RBAC limits what each one sees. Being mounted in the API server, it needs no port, server
// certificate or authentication of its own, which an aggregated API server would.

// DashboardRole names the ClusterRole and ClusterRoleBinding that let every authenticated user open the
// dashboard's pages; what the pages show is up to that user's own rights.
const DashboardRole = "flotilla:dashboard"

func dashboardRBAC() (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: DashboardRole},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/dashboard", "/dashboard/*"}, Verbs: []string{"get"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: DashboardRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: DashboardRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: user.AllAuthenticated}},
	}
	return role, binding
}

// lateHandler answers 503 until the dashboard is ready: the API server serves before the hub has installed
// the kinds the dashboard watches.
type lateHandler struct{ h atomic.Pointer[http.Handler] }

func (l *lateHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := l.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	http.Error(w, "the dashboard starts once the hub's APIs are installed", http.StatusServiceUnavailable)
}

// startDashboard grants authenticated users the dashboard's paths and starts its shared change watch; it
// runs until ctx ends. Pages read the kinds the controllers watch from their cache.
func (h *Hub) startDashboard(ctx context.Context, cache client.Reader) error {
	c, err := client.New(h.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	role, binding := dashboardRBAC()
	rules, ref, subjects := role.Rules, binding.RoleRef, binding.Subjects
	if _, err := controllerutil.CreateOrUpdate(ctx, c, role, func() error { role.Rules = rules; return nil }); err != nil {
		return fmt.Errorf("dashboard RBAC: %w", err)
	}
	if _, err := controllerutil.CreateOrUpdate(ctx, c, binding, func() error { binding.RoleRef, binding.Subjects = ref, subjects; return nil }); err != nil {
		return fmt.Errorf("dashboard RBAC: %w", err)
	}
	changes, err := dashboard.NewNotifier(ctx, h.Config, "")
	if err != nil {
		return err
	}
	changes.Start(ctx.Done())
	access, err := dashboard.NewImpersonating(h.Config, cache)
	if err != nil {
		return err
	}
	d, err := dashboard.New(access, changes, "")
	if err != nil {
		return err
	}
	var handler http.Handler = d
	h.dashboard.h.Store(&handler)
	return nil
}
