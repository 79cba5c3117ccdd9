package dashboard

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/internal/scheme"
)

// Direct is the access of flotilla dashboard: one person, their own credentials, for pages and changes.
type Direct struct {
	Reader client.Client
}

func (d Direct) Client(*http.Request) (client.Client, error) { return d.Reader, nil }

// Allowed is always true: the Notifier watched with the same credentials.
func (Direct) Allowed(*http.Request, Change) bool { return true }

// Impersonating is the access of the dashboard inside the hub: the hub API server has authenticated and
// authorized the request; pages are read by impersonating that user (with their groups and extras), and a
// change reaches their page only when a SubjectAccessReview says they may list its kind in its namespace.
// Clients and answers are kept for a short while, so a page view costs no extra review.
type Impersonating struct {
	Base    *rest.Config // a hub identity allowed to impersonate and to create SubjectAccessReviews
	reviews kubernetes.Interface
	clients *utilcache.LRUExpireCache
	answers *utilcache.LRUExpireCache
}

// NewImpersonating is the in-hub access through base.
func NewImpersonating(base *rest.Config) (*Impersonating, error) {
	reviews, err := kubernetes.NewForConfig(base)
	if err != nil {
		return nil, err
	}
	return &Impersonating{Base: base, reviews: reviews, clients: utilcache.NewLRUExpireCache(256), answers: utilcache.NewLRUExpireCache(4096)}, nil
}

// answerTTL is how long a review's answer stands: a revoked role stops live updates within it.
const answerTTL = 10 * time.Second

func requester(r *http.Request) (user.Info, error) {
	u, ok := request.UserFrom(r.Context())
	if !ok || u.GetName() == "" {
		return nil, errors.New("no authenticated user on the request")
	}
	return u, nil
}

func userKey(u user.Info) string {
	return u.GetName() + "\x00" + u.GetUID() + "\x00" + strings.Join(u.GetGroups(), "\x01")
}

func (a *Impersonating) Client(r *http.Request) (client.Client, error) {
	u, err := requester(r)
	if err != nil {
		return nil, err
	}
	key := userKey(u)
	if c, ok := a.clients.Get(key); ok {
		return c.(client.Client), nil
	}
	cfg := rest.CopyConfig(a.Base)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	a.clients.Add(key, c, 10*time.Minute)
	return c, nil
}

func (a *Impersonating) Allowed(r *http.Request, c Change) bool {
	u, err := requester(r)
	if err != nil {
		return false
	}
	key := userKey(u) + "\x00" + c.Resource.String() + "\x00" + c.Namespace
	if v, ok := a.answers.Get(key); ok {
		return v.(bool)
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.GetExtra() {
		extra[k] = v
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	review, err := a.reviews.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: c.Namespace, Verb: "list", Group: c.Resource.Group, Resource: c.Resource.Resource}}},
		metav1.CreateOptions{})
	allowed := err == nil && review.Status.Allowed
	if err == nil {
		a.answers.Add(key, allowed, answerTTL)
	}
	return allowed
}
