package headroom

import (
	"net/http"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// Observe times, in the API server's handler chain (after authentication and impersonation, so the user is
// the one the request acts as), every write of a user that component does not name as one of the hub's own
// components, and tells the Limiter how long it took.
func (l *Limiter) Observe(component func(user.Info) bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			u, ok := request.UserFrom(req.Context())
			if !ok || !IsWrite(req.Method) || component(u) {
				next.ServeHTTP(w, req)
				return
			}
			start := time.Now()
			next.ServeHTTP(w, req)
			l.ObserveUser(start, time.Since(start))
		})
	}
}
