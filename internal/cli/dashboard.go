package cli

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/dashboard"
	"github.com/flotilla-io/flotilla/internal/scheme"
)

// dashboardOptions are the flags of flotilla dashboard.
type dashboardOptions struct {
	hub  cmdutil.HubFlags
	port int
}

func (o *dashboardOptions) validate() error {
	if o.port < 0 || o.port > 65535 {
		return fmt.Errorf("--port %d: want 0 (any free port) to 65535", o.port)
	}
	return nil
}

func newDashboardCommand() *cobra.Command {
	o := &dashboardOptions{}
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve the fleet dashboard on 127.0.0.1, reading the hub with your own credentials",
		Long: `Serve the fleet dashboard (clusters, workloads, why a workload is not on a cluster, policies) on
127.0.0.1, for a hub you reach with a kubeconfig. Open the URL it prints: it carries a token of this
run, without which the dashboard answers nobody. Every page is read with your credentials, so you see
what hub RBAC lets you see; pages update themselves within a second of a change. A person who may only
read one namespace names it with --namespace (default: the kubeconfig context's namespace), so live
updates watch that namespace. The hub serves the same pages on its dashboard port (6444).`,
		Example: "  flotilla dashboard --kubeconfig ~/.flotilla/up/hub.kubeconfig --port 8080",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context(), func(url string) { fmt.Fprintf(cmd.OutOrStdout(), "dashboard at %s\n", url) })
		},
	}
	o.hub.AddFlags(cmd.Flags())
	cmd.Flags().IntVar(&o.port, "port", 8080, "port on 127.0.0.1 (0: any free port)")
	o.hub.AddNamespaceFlag(cmd.Flags(), "namespace to watch when you may not watch every namespace")
	return cmd
}

func (o *dashboardOptions) run(ctx context.Context, ready func(url string)) error {
	cfg, err := o.hub.RestConfig()
	if err != nil {
		return err
	}
	namespace, err := o.hub.Namespace()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	changes, err := dashboard.NewNotifier(ctx, cfg, namespace)
	if err != nil {
		return err
	}
	changes.Start(ctx.Done())
	handler, err := dashboard.New(dashboard.Direct{Reader: c}, changes, namespace)
	if err != nil {
		return err
	}
	listener, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(o.port)))
	if err != nil {
		return fmt.Errorf("--port %d: %w", o.port, err)
	}
	mux := http.NewServeMux()
	mux.Handle(dashboard.Prefix, handler)
	mux.Handle("/{$}", http.RedirectHandler(dashboard.Prefix, http.StatusFound))
	token, err := runToken()
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: localOnly(listener.Addr().String(), withRunToken(token, listener.Addr(), mux)), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	ready("http://" + listener.Addr().String() + dashboard.Prefix + "?" + tokenParam + "=" + token)
	if err := srv.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// localOnly refuses requests whose Host is not the address served: a web page elsewhere that resolves its
// own name to 127.0.0.1 (DNS rebinding) must not read the hub with this person's credentials.
func localOnly(addr string, next http.Handler) http.Handler {
	_, port, _ := net.SplitHostPort(addr)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != addr && r.Host != "localhost:"+port {
			http.Error(w, "the dashboard answers only at "+addr, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// The dashboard of flotilla dashboard reads the hub with this person's credentials, so anything that can
// reach 127.0.0.1 (another local user, a page in any browser tab) must not use it. Each run makes a random
// token and prints it in the URL; the first request that brings it gets it back as a cookie (named after the
// port: browsers share cookies between the ports of one host) and is sent to the same URL without it, and
// every request must bring the cookie.
const tokenParam = "token"

// runToken is 32 random bytes, URL-safe.
func runToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// withRunToken lets through requests that carry token, as a cookie or (the printed URL) as a parameter.
func withRunToken(token string, addr net.Addr, next http.Handler) http.Handler {
	matches := func(v string) bool { return subtle.ConstantTimeCompare([]byte(v), []byte(token)) == 1 }
	_, port, _ := net.SplitHostPort(addr.String())
	tokenCookie := "flotilla-dashboard-" + port
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query(); q.Has(tokenParam) && matches(q.Get(tokenParam)) {
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q.Del(tokenParam)
			clean := *r.URL
			clean.RawQuery = q.Encode()
			http.Redirect(w, r, clean.RequestURI(), http.StatusFound)
			return
		}
		if c, err := r.Cookie(tokenCookie); err != nil || !matches(c.Value) {
			http.Error(w, "open the dashboard with the URL flotilla dashboard printed (it carries this run's token)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
