// Package dashboard serves the fleet dashboard: server-rendered pages of clusters, workloads and policies,
// read from the hub as the person looking at them, and kept live by server-sent events.
//
// Every page is read with a client that acts as the requester (their own credentials for flotilla dashboard;
// inside the hub, the controllers' cache after a SubjectAccessReview for the kinds it holds, impersonation of
// the authenticated user for the others), so hub RBAC decides what each person sees. Live
// updates come from one set of metadata-only informers (a Notifier); each change is passed on to a page only
// when Access says its requester may read that kind in that namespace. A change carries no content: the page
// fetches itself again as the requester.
package dashboard

import (
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Prefix is where the dashboard lives, on the hub's dashboard port and on flotilla dashboard's own port;
// Events is its stream of changes, which stays open as long as a page does.
const (
	Prefix = "/dashboard/"
	Events = Prefix + "events"
)

//go:embed web
var web embed.FS

// Access is the dashboard's view of the hub for one request.
type Access interface {
	// Client reads the hub as the person who made the request.
	Client(r *http.Request) (client.Client, error)
	// Allowed reports whether that person may list the changed kind in the change's namespace.
	Allowed(r *http.Request, c Change) bool
}

// Server serves the dashboard's pages, its event stream and its assets.
type Server struct {
	access    Access
	changes   *Notifier
	pages     map[string]*template.Template
	mux       *http.ServeMux
	debounce  time.Duration
	namespace string
	streams   openStreams
}

// listNamespaced lists a namespaced kind in the namespace the request asks for; with none, in every
// namespace, or in the default namespace when the person may not list them all.
func (s *Server) listNamespaced(r *http.Request, c client.Client, list client.ObjectList) error {
	if ns := r.URL.Query().Get("namespace"); ns != "" {
		return c.List(r.Context(), list, client.InNamespace(ns))
	}
	err := c.List(r.Context(), list)
	if apierrors.IsForbidden(err) && s.namespace != "" {
		return c.List(r.Context(), list, client.InNamespace(s.namespace))
	}
	return err
}

// New is a dashboard reading through access and made live by changes. A person who may not list bindings
// and policies in every namespace sees those of defaultNamespace, unless they choose another.
func New(access Access, changes *Notifier, defaultNamespace string) (*Server, error) {
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	s := &Server{access: access, changes: changes, pages: pages, mux: http.NewServeMux(), debounce: 100 * time.Millisecond,
		namespace: defaultNamespace}
	static, err := fs.Sub(web, "web/static")
	if err != nil {
		return nil, err
	}
	s.mux.Handle("GET "+Prefix+"static/", http.StripPrefix(Prefix+"static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET "+Events, s.events)
	s.mux.Handle("GET "+Prefix+"{$}", s.page("fleet", s.fleet))
	s.mux.Handle("GET "+Prefix+"clusters/{name}", s.page("cluster", s.cluster))
	s.mux.Handle("GET "+Prefix+"workloads", s.page("workloads", s.workloads))
	s.mux.Handle("GET "+Prefix+"workloads/{namespace}/{name}", s.page("workload", s.workload))
	s.mux.Handle("GET "+Prefix+"policies", s.page("policies", s.policies))
	return s, nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// Pages show what one person may read: no cache, shared or the browser's own, keeps a copy.
	if !strings.HasPrefix(r.URL.Path, Prefix+"static/") {
		w.Header().Set("Cache-Control", "no-store")
	}
	s.mux.ServeHTTP(w, r)
}

// maxStreamsPerViewer bounds the event streams one person holds open on this dashboard (one per open page):
// each holds a connection and a subscription to every change.
const maxStreamsPerViewer = 16

// openStreams counts the event streams open per person.
type openStreams struct {
	mu     sync.Mutex
	counts map[string]int
}

func (o *openStreams) open(viewer string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.counts == nil {
		o.counts = map[string]int{}
	}
	if o.counts[viewer] >= maxStreamsPerViewer {
		return false
	}
	o.counts[viewer]++
	return true
}

func (o *openStreams) close(viewer string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.counts[viewer]--; o.counts[viewer] == 0 {
		delete(o.counts, viewer)
	}
}

// pageData is what every page template gets: its title, the active tab and the page's own data.
type pageData struct {
	Title string
	Tab   string
	Page  any
	Err   string // what went wrong instead of the page, for example what the person may not read
}

// page renders one page from load; a request with the X-Dashboard-Partial header (a live refresh) gets only
// the page's main element.
func (s *Server) page(name string, load func(r *http.Request, c client.Client) (string, any, error)) http.Handler {
	tabs := map[string]string{"fleet": "fleet", "cluster": "fleet", "workloads": "workloads", "workload": "workloads", "policies": "policies"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := s.access.Client(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		title, data, err := load(r, c)
		status := http.StatusOK
		page := pageData{Title: title, Tab: tabs[name], Page: data}
		if err != nil {
			status = http.StatusInternalServerError
			var apiErr apierrors.APIStatus
			if errors.As(err, &apiErr) {
				status = int(apiErr.Status().Code)
			}
			page = pageData{Title: http.StatusText(status), Tab: tabs[name], Err: err.Error()}
			if status == http.StatusForbidden {
				page.Err = "The hub does not let you read this: " + err.Error()
			}
		}
		block := "layout"
		if r.Header.Get("X-Dashboard-Partial") != "" {
			block = "content"
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		if err := s.pages[name].ExecuteTemplate(w, block, page); err != nil {
			klog.ErrorS(err, "dashboard page", "page", name)
		}
	})
}

// events streams a "change" event whenever something the requester may see changes, at most one per
// debounce interval: the page then fetches itself again.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	viewer := ""
	if u, err := requester(r); err == nil {
		viewer = u.GetName()
	}
	if !s.streams.open(viewer) {
		http.Error(w, fmt.Sprintf("%d dashboard pages are open for you already: close one", maxStreamsPerViewer), http.StatusTooManyRequests)
		return
	}
	defer s.streams.close(viewer)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 1000\n\n")
	flusher.Flush()
	changes, stop := s.changes.Subscribe()
	defer stop()
	var pending <-chan time.Time
	for {
		select {
		case <-r.Context().Done():
			return
		case c := <-changes:
			if pending == nil && s.access.Allowed(r, c) {
				pending = time.After(s.debounce)
			}
		case <-pending:
			pending = nil
			if _, err := fmt.Fprint(w, "event: change\ndata: {}\n\n"); err != nil {
				return
			}
			flusher.Flush()
		}
	}
}
