package controlplane

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	apiserverconfigv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"sigs.k8s.io/yaml"
)

// EncryptionKey is the file that holds the key kube-apiserver encrypts Secrets (and the other resources a
// control plane names) with before they reach etcd. Like the CAs it is generated once and never replaced:
// without it nothing encrypted can be read back. Control planes that share one etcd must share it.
func (p PKI) EncryptionKey() string { return p.path("encryption.key") }

// EncryptionConfig is the EncryptionConfiguration written from the key on every start.
func (p PKI) EncryptionConfig() string { return p.path("encryption-config.yaml") }

func (p PKI) ensureEncryptionKey() error {
	if _, err := p.readEncryptionKey(); err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	return writeFileAtomic(p.EncryptionKey(), []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600)
}

func (p PKI) readEncryptionKey() (string, error) {
	data, err := os.ReadFile(p.EncryptionKey())
	if err != nil {
		return "", err
	}
	key := strings.TrimSpace(string(data))
	if raw, err := base64.StdEncoding.DecodeString(key); err != nil || len(raw) != 32 {
		return "", fmt.Errorf("%s: not a base64-encoded 32-byte key", p.EncryptionKey())
	}
	return key, nil
}

// writeEncryptionConfig writes the EncryptionConfiguration that encrypts secrets and the given resources
// (resource.group, such as works.work.flotilla.io) with secretbox under the key in EncryptionKey. Objects
// stored before encryption was on stay readable through the identity provider and are encrypted when next
// written.
func (p PKI) writeEncryptionConfig(resources []string) error {
	key, err := p.readEncryptionKey()
	if err != nil {
		return err
	}
	all := append([]string{"secrets"}, resources...)
	slices.Sort(all)
	cfg := apiserverconfigv1.EncryptionConfiguration{
		Resources: []apiserverconfigv1.ResourceConfiguration{{
			Resources: slices.Compact(all),
			Providers: []apiserverconfigv1.ProviderConfiguration{
				{Secretbox: &apiserverconfigv1.SecretboxConfiguration{Keys: []apiserverconfigv1.Key{{Name: "key1", Secret: key}}}},
				{Identity: &apiserverconfigv1.IdentityConfiguration{}},
			},
		}},
	}
	cfg.APIVersion, cfg.Kind = apiserverconfigv1.SchemeGroupVersion.String(), "EncryptionConfiguration"
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	return writeFileAtomic(p.EncryptionConfig(), data, 0o600)
}
