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
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
)

// ErrHubUnreachable is returned while the hub does not answer; joining retries it.
var ErrHubUnreachable = errors.New("hub unreachable")

// CAHash returns the pin of a CA certificate: "sha256:" and the hex SHA-256 of its SubjectPublicKeyInfo, as
// kubeadm prints it.
func CAHash(caPEM []byte) (string, error) {
	certs, err := certutil.ParseCertsPEM(caPEM)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(certs[0].RawSubjectPublicKeyInfo)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// HubCA returns the CA a client configuration for the hub trusts, from its data or its file.
func HubCA(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 || cfg.CAFile == "" {
		return cfg.CAData, nil
	}
	return os.ReadFile(cfg.CAFile)
}

// DiscoverCA fetches the hub's CA from its public cluster-info and accepts it only when its pin equals
// caHash. Nothing secret is sent before the pin matches: the request is anonymous.
func DiscoverCA(ctx context.Context, hubURL, caHash string) ([]byte, error) {
	if !strings.HasPrefix(caHash, "sha256:") || len(caHash) != len("sha256:")+64 {
		return nil, fmt.Errorf("--ca-cert-hash %q: want sha256:<64 hex digits>", caHash)
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
		return nil, fmt.Errorf("hub %s: cluster-info is not a ConfigMap: %w", hubURL, err)
	}
	cfg, err := clientcmd.Load([]byte(cm.Data["kubeconfig"]))
	if err != nil {
		return nil, fmt.Errorf("hub %s: cluster-info kubeconfig: %w", hubURL, err)
	}
	for _, cluster := range cfg.Clusters {
		got, err := CAHash(cluster.CertificateAuthorityData)
		if err != nil {
			return nil, fmt.Errorf("hub %s: cluster-info CA: %w", hubURL, err)
		}
		if got != caHash {
			return nil, fmt.Errorf("the hub's CA does not match --ca-cert-hash: the hub presents %s, the join command pins %s; "+
				"check the hub URL, or print a fresh join command with flotilla token create", got, caHash)
		}
		return cluster.CertificateAuthorityData, nil
	}
	return nil, fmt.Errorf("hub %s: cluster-info holds no cluster", hubURL)
}
