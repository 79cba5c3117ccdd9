package agent

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
)

// ServiceAccountDirEnv overrides where the agent reads the pod's ServiceAccount token, CA and namespace
// (default /var/run/secrets/kubernetes.io/serviceaccount). It exists so that the in-cluster path can run
// outside a pod: a test gives the agent a token of its ServiceAccount in a directory of its own.
const ServiceAccountDirEnv = "FLOTILLA_SERVICEACCOUNT_DIR"

const defaultServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

func serviceAccountDir() string {
	if dir := os.Getenv(ServiceAccountDirEnv); dir != "" {
		return dir
	}
	return defaultServiceAccountDir
}

// inClusterConfig is rest.InClusterConfig with the ServiceAccount directory of serviceAccountDir; the
// token file is re-read as the kubelet rotates it.
func inClusterConfig() (*rest.Config, error) {
	if os.Getenv(ServiceAccountDirEnv) == "" {
		return rest.InClusterConfig()
	}
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, rest.ErrNotInCluster
	}
	dir := serviceAccountDir()
	tokenFile := filepath.Join(dir, "token")
	if _, err := os.Stat(tokenFile); err != nil {
		return nil, err
	}
	return &rest.Config{
		Host:            "https://" + net.JoinHostPort(host, port),
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(dir, "ca.crt")},
		BearerTokenFile: tokenFile,
	}, nil
}

// InClusterNamespace is the namespace of the agent's pod.
func InClusterNamespace() (string, error) {
	data, err := os.ReadFile(filepath.Join(serviceAccountDir(), "namespace"))
	if err != nil {
		return "", fmt.Errorf("the agent's namespace: %w", err)
	}
	ns := strings.TrimSpace(string(data))
	if ns == "" {
		return "", errors.New("the agent's namespace: the ServiceAccount's namespace file is empty")
	}
	return ns, nil
}
