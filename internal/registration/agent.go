package registration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// JoinRequest is what an agent asks of the hub when it joins.
type JoinRequest struct {
	HubURL string
	Token  string
	// CACertHashes pin the hub's CA: every certificate the hub publishes for agents must match one of them.
	CACertHashes []string
	ClusterName  string
	// ClusterID identifies the member (its kube-system namespace UID). It is not secret: it only tells the
	// administrator which member asks, and `flotilla accept` re-registers a name only for the same ID.
	ClusterID string
	Labels    string
	Provider  string
	Region    string
	Zones     []string
	// CertTTL is the lifetime the agent asks for its certificate.
	CertTTL time.Duration
}

// Credential is the agent's hub identity, kept as a kubeconfig: in the agent's data directory, or in a
// Secret of the agent's namespace when it runs in the member (credential_secret.go).
type Credential struct {
	// Path says where the credential is kept, for messages: a file, or namespace/name of a Secret.
	Path  string
	store credentialStore
}

// credentialStore keeps the credential's kubeconfig. load returns nil data, and no error, when nothing is
// stored yet; any error reading is returned, never taken for "not joined".
type credentialStore interface {
	load() ([]byte, error)
	save(data []byte) error
}

// NewCredential returns the credential kept in dataDir.
func NewCredential(dataDir string) Credential {
	path := filepath.Join(dataDir, "hub.kubeconfig")
	return Credential{Path: path, store: fileStore(path)}
}

// Exists reports whether the agent has joined before.
func (c Credential) Exists() (bool, error) {
	data, err := c.store.load()
	return len(data) > 0, err
}

func (c Credential) kubeconfig() ([]byte, error) {
	data, err := c.store.load()
	if err == nil && len(data) == 0 {
		err = fmt.Errorf("no credential in %s: %w", c.Path, ErrNotJoined)
	}
	return data, err
}

// RESTConfig returns a client configuration for the hub under the agent's identity.
func (c Credential) RESTConfig() (*rest.Config, error) {
	data, err := c.kubeconfig()
	if err != nil {
		return nil, err
	}
	return clientcmd.RESTConfigFromKubeConfig(data)
}

// Certificate returns the agent's current client certificate.
func (c Credential) Certificate() (*x509.Certificate, error) {
	data, err := c.kubeconfig()
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, err
	}
	for _, auth := range cfg.AuthInfos {
		certs, err := certutil.ParseCertsPEM(auth.ClientCertificateData)
		if err != nil {
			return nil, err
		}
		return certs[0], nil
	}
	return nil, fmt.Errorf("%s holds no client certificate", c.Path)
}

// User returns the agent user name the credential authenticates as.
func (c Credential) User() (string, error) {
	cert, err := c.Certificate()
	if err != nil {
		return "", err
	}
	if _, ok := ClusterOfUser(cert.Subject.CommonName); !ok {
		return "", fmt.Errorf("%s is not a Flotilla agent certificate (CN %q)", c.Path, cert.Subject.CommonName)
	}
	return cert.Subject.CommonName, nil
}

// ClusterName returns the cluster the credential belongs to.
func (c Credential) ClusterName() (string, error) {
	user, err := c.User()
	if err != nil {
		return "", err
	}
	name, _ := ClusterOfUser(user)
	return name, nil
}

func (c Credential) save(hubURL string, caPEM, certPEM []byte, key *ecdsa.PrivateKey) error {
	data, err := hubKubeconfig(hubURL, caPEM, certPEM, key)
	if err != nil {
		return err
	}
	return c.store.save(data)
}

// hubKubeconfig is a kubeconfig that reaches the hub at hubURL, trusting caPEM, with a client certificate and
// its key: the credential of an agent or of an add-on's agent.
func hubKubeconfig(hubURL string, caPEM, certPEM []byte, key *ecdsa.PrivateKey) ([]byte, error) {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = &clientcmdapi.Cluster{Server: hubURL, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["agent"] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "agent"}
	cfg.CurrentContext = "hub"
	return clientcmd.Write(*cfg)
}

// fileStore keeps the credential in a file readable only by the agent's user.
type fileStore string

func (f fileStore) load() ([]byte, error) {
	data, err := os.ReadFile(string(f))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

func (f fileStore) save(data []byte) error {
	if err := os.MkdirAll(filepath.Dir(string(f)), 0o700); err != nil {
		return err
	}
	tmp := string(f) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, string(f))
}

// Join verifies the hub's CA against the pin, files the join CSR with the bootstrap token, waits for the
// hub's decision and the signed certificate, and stores the credential.
func Join(ctx context.Context, r JoinRequest, cred Credential, progress func(string)) error {
	caPEM, err := discoverWithRetry(ctx, r.HubURL, r.CACertHashes, progress)
	if err != nil {
		return err
	}
	progress("hub CA matches the pinned hash")
	cfg := &rest.Config{Host: r.HubURL, BearerToken: r.Token, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	annotations := map[string]string{
		AnnotationClusterID: r.ClusterID, AnnotationLabels: r.Labels,
		AnnotationProvider: r.Provider, AnnotationRegion: r.Region, AnnotationZones: strings.Join(r.Zones, ","),
	}
	// The registration suffix makes this join's identity its own: a later registration of the same name gets
	// another one, and the hub binds rights to the Cluster's current one only.
	registration, err := randomHex(10)
	if err != nil {
		return err
	}
	certPEM, key, err := requestCertificate(ctx, kube, agentCertificate(AgentUser(r.ClusterName, registration), annotations), r.CertTTL, progress)
	if err != nil {
		if apierrors.IsUnauthorized(err) {
			return fmt.Errorf("the hub rejected the token: it is unknown, expired or malformed; create a new one with flotilla token create")
		}
		return err
	}
	return cred.save(r.HubURL, caPEM, certPEM, key)
}

// discoverWithRetry fetches the hub's CA, retrying with backoff while the hub is unreachable and saying so.
func discoverWithRetry(ctx context.Context, hubURL string, caHashes []string, progress func(string)) ([]byte, error) {
	var caPEM []byte
	var last error
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Cap: 30 * time.Second, Steps: 1 << 30}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		caPEM, last = DiscoverCA(ctx, hubURL, caHashes)
		if errors.Is(last, ErrHubUnreachable) {
			progress(last.Error() + "; retrying")
			return false, nil
		}
		return last == nil, last
	})
	if err != nil && last != nil && !errors.Is(err, last) {
		return nil, fmt.Errorf("%w (gave up: %v)", last, err)
	}
	return caPEM, err
}

// Renew files a renewal CSR authenticated by the current certificate and stores the new one.
func (c Credential) Renew(ctx context.Context, ttl time.Duration) error {
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	user, err := c.User()
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	certPEM, key, err := requestCertificate(ctx, kube, agentCertificate(user, nil), ttl, func(string) {})
	if err != nil {
		return err
	}
	return c.save(cfg.Host, cfg.CAData, certPEM, key)
}

// certificateRequest is what a CSR asks for: a client certificate for user in groups, filed under a name
// that starts with namePrefix, with labels and annotations.
type certificateRequest struct {
	user, cluster, namePrefix string
	groups                    []string
	labels, annotations       map[string]string
}

// agentCertificate is the request for the certificate of the agent user name user.
func agentCertificate(user string, annotations map[string]string) certificateRequest {
	cluster, _ := ClusterOfUser(user)
	return certificateRequest{user: user, cluster: cluster, namePrefix: "flotilla-" + cluster, groups: []string{AgentGroup},
		labels: map[string]string{LabelClusterName: cluster}, annotations: annotations}
}

// requestCertificate files a CSR for r with a key made here, in memory, and waits for the signed
// certificate.
func requestCertificate(ctx context.Context, kube kubernetes.Interface, r certificateRequest,
	ttl time.Duration, progress func(string)) ([]byte, *ecdsa.PrivateKey, error) {
	cluster := r.cluster
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: r.user, Organization: r.groups},
	}, key)
	if err != nil {
		return nil, nil, err
	}
	// Token holders and agents may get a CSR by name but not list them: an unguessable name keeps each
	// request to its requester.
	suffix, err := randomHex(16)
	if err != nil {
		return nil, nil, err
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{
			Name:        fmt.Sprintf("%s-%s", r.namePrefix, suffix),
			Labels:      r.labels,
			Annotations: r.annotations,
		},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName:        certificatesv1.KubeAPIServerClientSignerName,
			ExpirationSeconds: ptr.To(int32(ttl.Seconds())),
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth, certificatesv1.UsageDigitalSignature},
		},
	}
	csrs := kube.CertificatesV1().CertificateSigningRequests()
	// A token created a moment ago may not have reached the API server's token cache yet: an Unauthorized
	// answer is retried for a few seconds before it counts.
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 5}
	err = retry.OnError(backoff, apierrors.IsUnauthorized, func() error {
		created, err := csrs.Create(ctx, csr, metav1.CreateOptions{})
		if err == nil {
			csr = created
		}
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("filing the certificate request: %w", err)
	}
	progress(fmt.Sprintf("certificate request %s filed; waiting for the hub to approve it "+
		"(a hub with --require-approval, or a name that is already registered, waits for flotilla accept %s)", csr.Name, cluster))
	var cert []byte
	waited := false
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err := csrs.Get(ctx, csr.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range got.Status.Conditions {
			if (c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed) && c.Status == corev1.ConditionTrue {
				return false, fmt.Errorf("%w (%s): %s", ErrDenied, c.Reason, c.Message)
			}
			if c.Type == certificatesv1.CertificateApproved && !waited {
				waited = true
				progress("approved; waiting for the signed certificate")
			}
		}
		cert = got.Status.Certificate
		return len(cert) > 0, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// randomHex returns n random bytes from the system's secure source, hex-encoded.
func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// ErrDenied says the hub decided against a certificate request: asking again the same way will not help.
var ErrDenied = errors.New("the hub denied the certificate request")

// Expired reports whether the credential's certificate has expired at now, and when it expires.
func (c Credential) Expired(now time.Time) (bool, time.Time, error) {
	cert, err := c.Certificate()
	if err != nil {
		return false, time.Time{}, err
	}
	return !now.Before(cert.NotAfter), cert.NotAfter, nil
}

// ErrNotJoined is returned when an agent starts without a credential and without a token.
var ErrNotJoined = errors.New("this agent has not joined a hub: run flotilla join with a token first")
