package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Direct is the access of flotilla dashboard: one person, their own credentials, for pages and changes.
type Direct struct {
	Reader client.Client
}

func (d Direct) Client(*http.Request) (client.Client, error) { return d.Reader, nil }

// Allowed is always true: the Notifier watched with the same credentials.
func (Direct) Allowed(*http.Request, Change) bool { return true }

// Impersonating is the access of the dashboard inside the hub: the hub has authenticated and authorized the
// request (its dashboard server delegates both); pages are read by impersonating that user (with their groups and extras), and a
// change reaches their page only when a SubjectAccessReview says they may list its kind in its namespace.
// Clients and answers are kept for a short while, so a page view costs no extra review.
//
// With a cache, the kinds the hub's controllers keep there (cached.go) are read from it instead, once a
// review says the person may read them: a page over 1,000 bindings then costs no list the API server
// encodes and the dashboard decodes again for every view.
type Impersonating struct {
	Base    *rest.Config // a hub identity allowed to impersonate and to create SubjectAccessReviews (the hub's front user)
	cache   client.Reader
	reviews kubernetes.Interface
	clients *utilcache.LRUExpireCache
	answers *utilcache.LRUExpireCache
	// asking shares one review among the requests that need the same answer at once (every open page of a
	// person when a change comes).
	asking singleflight.Group
}

// NewImpersonating is the in-hub access through base; cache, when not nil, holds the cached kinds.
func NewImpersonating(base *rest.Config, cache client.Reader) (*Impersonating, error) {
	reviews, err := kubernetes.NewForConfig(base)
	if err != nil {
		return nil, err
	}
	return &Impersonating{Base: base, cache: cache, reviews: reviews, clients: utilcache.NewLRUExpireCache(256),
		answers: utilcache.NewLRUExpireCache(4096)}, nil
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
	c, ok := a.clients.Get(key)
	if !ok {
		cfg := rest.CopyConfig(a.Base)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
		if c, err = client.New(cfg, client.Options{Scheme: typed}); err != nil {
			return nil, err
		}
		a.clients.Add(key, c, 10*time.Minute)
	}
	if a.cache == nil {
		return c.(client.Client), nil
	}
	return &cachedReads{Client: c.(client.Client), cache: a.cache, may: func(ctx context.Context, verb string, gr schema.GroupResource, namespace, name string) (bool, error) {
		return a.may(ctx, u, verb, gr, namespace, name)
	}}, nil
}

func (a *Impersonating) Allowed(r *http.Request, c Change) bool {
	u, err := requester(r)
	if err != nil {
		return false
	}
	allowed, err := a.may(r.Context(), u, "list", c.Resource.GroupResource(), c.Namespace, "")
	return err == nil && allowed
}

// may asks a SubjectAccessReview whether u may verb the resource (in namespace; by name, when given), or
// takes the answer a review gave within answerTTL.
func (a *Impersonating) may(ctx context.Context, u user.Info, verb string, gr schema.GroupResource, namespace, name string) (bool, error) {
	key := strings.Join([]string{userKey(u), verb, gr.String(), namespace, name}, "\x00")
	if v, ok := a.answers.Get(key); ok {
		return v.(bool), nil
	}
	allowed, err, _ := a.asking.Do(key, func() (any, error) {
		extra := map[string]authorizationv1.ExtraValue{}
		for k, v := range u.GetExtra() {
			extra[k] = v
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		review, err := a.reviews.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: extra,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: gr.Group,
					Resource: gr.Resource, Name: name}}},
			metav1.CreateOptions{})
		if err != nil {
			return false, fmt.Errorf("asking the hub whether %s may %s %s: %w", u.GetName(), verb, gr, err)
		}
		a.answers.Add(key, review.Status.Allowed, answerTTL)
		return review.Status.Allowed, nil
	})
	return allowed.(bool), err
}
