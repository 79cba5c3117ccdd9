// Package members is the one way the hub reaches a Push member, for every part of the hub that does: the
// push executor, the proxy, the service collector and the push status reporter.
//
//   - The credentials: the Secret a Push Cluster names holds a kubeconfig or a token (SecretKey*); RESTConfig
//     combines it with the Cluster's endpoint, proxy and TLS setting, refusing whatever would make the hub run
//     a command or read a file (ValidateKubeconfig, also used at join) and a token over plain http.
//   - Config reads the Secret and, before an endpoint or Secret is used for a Cluster the first time (and
//     every ten minutes after), confirms that the member answers with the Cluster's ID. Refused credentials
//     are an InvalidCredentialsError, which the status reporter turns into CredentialsValid=False.
//   - Cache holds, per cluster, what one user builds from a member's configuration, under one rule:
//
// A value is used until its Cluster's UID or credential fields (endpoint, proxy, TLS setting, Secret
// reference, ID) change, or TTL passes since the member's configuration was last read, whichever comes
// first. Then the Secret is read again, and the value is built anew only when the configuration's
// fingerprint (endpoint, proxy, TLS settings and credentials) changed, so a reread that finds nothing new
// keeps the value's connections and watches. Errors are never held, and a value is never used past TTL
// without a successful reread. A cluster that left or is no longer served is dropped by its user (Drop),
// which stops the value.
//
// The package imports no controller, so the hub's controllers and the proxy share it without import edges
// running upward.
package members
