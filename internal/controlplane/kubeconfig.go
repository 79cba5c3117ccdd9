package controlplane

import (
	"os"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

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
