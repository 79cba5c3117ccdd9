package registration

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// CredentialSecretKey is the key of the kubeconfig in a credential Secret.
const CredentialSecretKey = "hub.kubeconfig"

// NewSecretCredential returns the credential kept in the Secret namespace/name of the member: an agent that
// runs as a pod keeps its identity there, so a new pod (a restart, a reschedule) is the same agent. The
// Secret may exist empty beforehand (the agent chart creates it, so the agent needs no right to create
// Secrets); otherwise the agent creates it.
func NewSecretCredential(member kubernetes.Interface, namespace, name string) Credential {
	return Credential{Path: "Secret " + namespace + "/" + name, store: secretStore{member: member, namespace: namespace, name: name}}
}

type secretStore struct {
	member          kubernetes.Interface
	namespace, name string
}

// secretTimeout bounds each read or write of the Secret: the member may hang, and the caller retries.
const secretTimeout = 30 * time.Second

func (s secretStore) load() ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), secretTimeout)
	defer cancel()
	secret, err := s.member.CoreV1().Secrets(s.namespace).Get(ctx, s.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading the hub credential from Secret %s/%s: %w", s.namespace, s.name, err)
	}
	return secret.Data[CredentialSecretKey], nil
}

func (s secretStore) save(data []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), secretTimeout)
	defer cancel()
	secrets := s.member.CoreV1().Secrets(s.namespace)
	secret, err := secrets.Get(ctx, s.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.namespace,
				Labels: map[string]string{"app.kubernetes.io/name": "flotilla-agent", "app.kubernetes.io/component": "agent"}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{CredentialSecretKey: data},
		}
		_, err = secrets.Create(ctx, secret, metav1.CreateOptions{})
	} else if err == nil {
		if secret.Data == nil {
			secret.Data = map[string][]byte{}
		}
		secret.Data[CredentialSecretKey] = data
		_, err = secrets.Update(ctx, secret, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("storing the hub credential in Secret %s/%s: %w", s.namespace, s.name, err)
	}
	return nil
}
