package controlplane

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
)

// AdminKubeconfigPath is where a hub embedding the control plane writes its cluster-admin kubeconfig in its
// data directory.
func AdminKubeconfigPath(dataDir string) string { return filepath.Join(dataDir, "admin.kubeconfig") }

// ReadAdminKubeconfig returns the cluster-admin kubeconfig the hub in dataDir wrote. A non-empty server
// (https://HOST:PORT) replaces the address in it, such as the hub Service's DNS name for a kubeconfig used
// outside the hub's pod; its host must be one the control plane's serving certificate names, or the
// kubeconfig would fail on TLS where it is used rather than here.
func ReadAdminKubeconfig(dataDir, server string) (*clientcmdapi.Config, error) {
	path := AdminKubeconfigPath(dataDir)
	cfg, err := clientcmd.LoadFromFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s does not exist: the hub writes it once its API serves; is a hub running with --data-dir %s?", path, dataDir)
	} else if err != nil {
		return nil, err
	}
	if server == "" {
		return cfg, nil
	}
	u, err := url.Parse(server)
	if err != nil {
		return nil, err
	}
	certs, err := certutil.CertsFromFile(PKI{Dir: filepath.Join(dataDir, "pki")}.ServingCert())
	if err != nil {
		return nil, fmt.Errorf("the hub's serving certificate: %w", err)
	}
	cert := certs[0]
	if err := cert.VerifyHostname(u.Hostname()); err != nil {
		return nil, fmt.Errorf("the hub's serving certificate does not name %s (it names %v): start the hub with --tls-san %s (the chart's extraTLSSANs)",
			u.Hostname(), append(cert.DNSNames, ipStrings(cert)...), u.Hostname())
	}
	for _, cluster := range cfg.Clusters {
		cluster.Server = server
	}
	return cfg, nil
}

func ipStrings(cert *x509.Certificate) []string {
	var ips []string
	for _, ip := range cert.IPAddresses {
		ips = append(ips, ip.String())
	}
	return ips
}

// kubeconfigFor builds a kubeconfig that reaches server as the holder of a client certificate, with every
// file's content embedded so the kubeconfig can be copied elsewhere.
func kubeconfigFor(name, server string, pki PKI, user string) (*clientcmdapi.Config, error) {
	ca, err := os.ReadFile(pki.CACert())
	if err != nil {
		return nil, err
	}
	cert, err := os.ReadFile(pki.ClientCert(user))
	if err != nil {
		return nil, err
	}
	key, err := os.ReadFile(pki.ClientKey(user))
	if err != nil {
		return nil, err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	cfg.CurrentContext = name
	return cfg, nil
}

// writeKubeconfig writes a kubeconfig atomically: a reader sees either no file or a complete one.
func writeKubeconfig(path string, cfg *clientcmdapi.Config) error {
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, data, 0o600)
}
