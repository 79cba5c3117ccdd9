package admission

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controlplane"
)

// webhookCASecret, in the system namespace, keeps the CA of the webhook's serving certificates. Every hub
// process over one cluster issues its own serving certificate from it, so the one caBundle of the webhook
// configuration verifies all of them, whichever the cluster's API server reaches.
const webhookCASecret = "flotilla-webhook-ca"

// webhookCA is the CA the webhook's serving certificates are issued from.
type webhookCA struct {
	cert *x509.Certificate
	key  crypto.Signer
	pem  []byte
}

// ensureWebhookCA reads the CA from its Secret, creating the Secret when there is none (or when its CA has
// less than a third of its life left).
func ensureWebhookCA(ctx context.Context, kube kubernetes.Interface) (*webhookCA, error) {
	secrets := kube.CoreV1().Secrets(clusterv1alpha1.SystemNamespace)
	secret, err := secrets.Get(ctx, webhookCASecret, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		secret = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: webhookCASecret, Namespace: clusterv1alpha1.SystemNamespace},
			Type:       corev1.SecretTypeTLS,
		}
	case err != nil:
		return nil, fmt.Errorf("reading the webhook's CA (Secret %s/%s): %w", clusterv1alpha1.SystemNamespace, webhookCASecret, err)
	default:
		if ca, err := parseCA(secret.Data); err == nil && time.Until(ca.cert.NotAfter) > ca.cert.NotAfter.Sub(ca.cert.NotBefore)/3 {
			return ca, nil
		}
	}
	cert, key, err := controlplane.NewCA("flotilla-webhook-ca")
	if err != nil {
		return nil, err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, err
	}
	secret.Data = map[string][]byte{
		corev1.TLSCertKey:       pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: cert.Raw}),
		corev1.TLSPrivateKeyKey: keyPEM,
	}
	if secret.ResourceVersion == "" {
		_, err = secrets.Create(ctx, secret, metav1.CreateOptions{})
	} else {
		_, err = secrets.Update(ctx, secret, metav1.UpdateOptions{})
	}
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		// Another hub process wrote it first: use that one.
		return ensureWebhookCA(ctx, kube)
	}
	if err != nil {
		return nil, fmt.Errorf("writing the webhook's CA (Secret %s/%s): %w", clusterv1alpha1.SystemNamespace, webhookCASecret, err)
	}
	return &webhookCA{cert: cert, key: key, pem: secret.Data[corev1.TLSCertKey]}, nil
}

func parseCA(data map[string][]byte) (*webhookCA, error) {
	certs, err := certutil.ParseCertsPEM(data[corev1.TLSCertKey])
	if err != nil {
		return nil, err
	}
	key, err := keyutil.ParsePrivateKeyPEM(data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok || !certs[0].IsCA {
		return nil, fmt.Errorf("not a CA certificate and signing key")
	}
	return &webhookCA{cert: certs[0], key: signer, pem: data[corev1.TLSCertKey]}, nil
}

// servingCert issues a serving certificate for hosts from the CA.
func (ca *webhookCA) servingCert(hosts []string) (*tls.Certificate, error) {
	cert, key, err := controlplane.NewServingCert(ca.cert, ca.key, hosts[0], hosts)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}, nil
}
