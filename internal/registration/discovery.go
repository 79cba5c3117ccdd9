package registration

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
)

// ErrHubUnreachable is returned while the hub does not answer; joining retries it.
var ErrHubUnreachable = errors.New("hub unreachable")

// CAHashes returns the pin of each certificate in a CA bundle: "sha256:" and the hex SHA-256 of its
// SubjectPublicKeyInfo, as kubeadm prints it.
func CAHashes(caPEM []byte) ([]string, error) {
	certs, err := certutil.ParseCertsPEM(caPEM)
	if err != nil {
		return nil, err
	}
	hashes := make([]string, 0, len(certs))
	for _, cert := range certs {
		hashes = append(hashes, PublicKeyHash(cert.RawSubjectPublicKeyInfo))
	}
	return hashes, nil
}

// PublicKeyHash is "sha256:" and the hex SHA-256 of a DER SubjectPublicKeyInfo: the form of a CA pin, and of
// the agent key a Cluster records.
func PublicKeyHash(spki []byte) string {
	sum := sha256.Sum256(spki)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ValidateCAHash checks the form of a pin: sha256:<64 hex digits>.
func ValidateCAHash(caHash string) error {
	digits, ok := strings.CutPrefix(caHash, "sha256:")
	if _, err := hex.DecodeString(digits); !ok || len(digits) != 64 || err != nil {
		return fmt.Errorf("--ca-cert-hash %q: want sha256:<64 hex digits>", caHash)
	}
	return nil
}

// HubCA returns the CA a client configuration for the hub trusts, from its data or its file.
func HubCA(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 || cfg.CAFile == "" {
		return cfg.CAData, nil
	}
	return os.ReadFile(cfg.CAFile)
}

// DiscoverCA fetches the hub's CA bundle from its public cluster-info and accepts it only when every
// certificate in it matches one of caHashes: the bundle becomes the agent's trust, so one unpinned
// certificate in it would let its holder pose as the hub. Nothing secret is sent before the pins match: the
// request is anonymous.
func DiscoverCA(ctx context.Context, hubURL string, caHashes []string) ([]byte, error) {
	if len(caHashes) == 0 {
		return nil, errors.New("--ca-cert-hash is required: the pin of the hub's CA, from flotilla token create")
	}
	for _, h := range caHashes {
		if err := ValidateCAHash(h); err != nil {
			return nil, err
		}
	}
	client := &http.Client{
		Timeout: 10 * time.Second,
		// The CA is not known yet; the pin below is what makes the answer trustworthy.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec
	}
	url := strings.TrimSuffix(hubURL, "/") + "/api/v1/namespaces/" + ClusterInfoNamespace + "/configmaps/" + ClusterInfoName
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrHubUnreachable, hubURL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("hub %s: reading %s/%s: %s: %s", hubURL, ClusterInfoNamespace, ClusterInfoName, resp.Status, strings.TrimSpace(string(body)))
	}
	cm := &corev1.ConfigMap{}
	if err := json.Unmarshal(body, cm); err != nil {
		return nil, fmt.Errorf("hub %s: %s is not a ConfigMap: %w", hubURL, ClusterInfoName, err)
	}
	cfg, err := clientcmd.Load([]byte(cm.Data["kubeconfig"]))
	if err != nil {
		return nil, fmt.Errorf("hub %s: %s kubeconfig: %w", hubURL, ClusterInfoName, err)
	}
	for _, cluster := range cfg.Clusters {
		got, err := CAHashes(cluster.CertificateAuthorityData)
		if err != nil {
			return nil, fmt.Errorf("hub %s: %s CA: %w", hubURL, ClusterInfoName, err)
		}
		for _, h := range got {
			if !slices.Contains(caHashes, h) {
				return nil, fmt.Errorf("the hub's CA does not match --ca-cert-hash: the hub presents %s, the join command pins %s; "+
					"check the hub URL, or print a fresh join command with flotilla token create", strings.Join(got, ", "), strings.Join(caHashes, ", "))
			}
		}
		return cluster.CertificateAuthorityData, nil
	}
	return nil, fmt.Errorf("hub %s: %s holds no cluster", hubURL, ClusterInfoName)
}
