package hub

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/flotilla-io/flotilla/internal/controlplane"
	"github.com/flotilla-io/flotilla/internal/dashboard"
	"github.com/flotilla-io/flotilla/internal/proxy"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// The embedded hub serves the dashboard at /dashboard/ on a port of its own (--dashboard-port), never on the
// API's: the API's origin also serves members' content through clusters/NAME/proxy, and a member's page
// there must not be able to read the dashboard as the person looking. The dashboard's server is a small
// generic API server that delegates to the hub, as the proxy does: the hub authenticates each request
// (client certificate or bearer token) and authorizes its path; the dashboard then reads the hub by
// impersonating that person, so hub RBAC limits what each one sees.

// DashboardRole names the ClusterRole and ClusterRoleBinding that let the fleet's users (--fleet-user-groups)
// open the dashboard's pages; what the pages show is up to each user's own rights.
const DashboardRole = "flotilla:dashboard"

func dashboardRBAC(groups []string) (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: DashboardRole},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/dashboard", "/dashboard/*"}, Verbs: []string{"get"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: DashboardRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: DashboardRole},
		Subjects:   proxy.GroupSubjects(groups),
	}
	return role, binding
}

// startDashboard grants the fleet's users the dashboard's paths, starts its shared change watch and builds
// its server on o.DashboardPort; runDashboard serves it. Pages read the kinds the controllers watch from
// their cache, as front (the front identity) after a review, and the others as the person.
func (h *Hub) startDashboard(ctx context.Context, o *Options, cache client.Reader, front *rest.Config, frontKubeconfig string) error {
	c, err := client.New(h.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	role, binding := dashboardRBAC(o.FleetUserGroups)
	for _, want := range []client.Object{role, binding} {
		obj := want.DeepCopyObject().(client.Object)
		if _, err := controllerutil.CreateOrUpdate(ctx, c, obj, func() error { return restore(obj, want) }); err != nil {
			return fmt.Errorf("dashboard RBAC: %w", err)
		}
	}
	changes, err := dashboard.NewNotifier(ctx, h.Config, "")
	if err != nil {
		return err
	}
	changes.Start(ctx.Done())
	access, err := dashboard.NewImpersonating(front, cache)
	if err != nil {
		return err
	}
	handler, err := dashboard.New(access, changes, "")
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(o.BindAddress, strconv.Itoa(o.DashboardPort)))
	if err != nil {
		return fmt.Errorf("--dashboard-port %d: %w", o.DashboardPort, err)
	}
	pki := h.controlPlane.PKI()
	config, err := controlplane.DelegatedServing{Listener: ln, CertFile: pki.ServingCert(), KeyFile: pki.ServingKey(), AuthKubeconfig: frontKubeconfig}.Config(nil)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("dashboard server: %w", err)
	}
	config.LongRunningFunc = func(r *http.Request, _ *request.RequestInfo) bool { return r.URL.Path == dashboard.Events }
	server, err := config.Complete(nil).New("flotilla-dashboard", genericapiserver.NewEmptyDelegate())
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("dashboard server: %w", err)
	}
	server.Handler.NonGoRestfulMux.HandlePrefix(dashboard.Prefix, handler)
	h.dashboardServer = server
	// The hub's address (not the listener's, which may be 0.0.0.0), at the dashboard's port.
	api, err := url.Parse(h.Config.Host)
	if err != nil {
		return err
	}
	h.DashboardURL = "https://" + net.JoinHostPort(api.Hostname(), strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)) + dashboard.Prefix
	return nil
}

// runDashboard serves the dashboard until ctx ends.
func (h *Hub) runDashboard(ctx context.Context) error {
	if err := h.dashboardServer.PrepareRun().RunWithContext(ctx); err != nil && ctx.Err() == nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	return nil
}
