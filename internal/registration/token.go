package registration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

// Token is a Kubernetes bootstrap token that lets an agent file its join CSR, and nothing else.
type Token struct {
	ID          string
	Secret      string
	Expires     time.Time
	Description string
}

// String is the token as the agent passes it: ID.SECRET.
func (t Token) String() string { return bootstraputil.TokenFromIDAndSecret(t.ID, t.Secret) }

// CreateToken creates a bootstrap token that expires after ttl.
func CreateToken(ctx context.Context, kube kubernetes.Interface, ttl time.Duration, description string) (Token, error) {
	raw, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return Token{}, err
	}
	id, secret, _ := strings.Cut(raw, ".")
	t := Token{ID: id, Secret: secret, Expires: time.Now().Add(ttl).UTC().Truncate(time.Second), Description: description}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstraputil.BootstrapTokenSecretName(id), Namespace: metav1.NamespaceSystem},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		StringData: map[string]string{
			bootstrapapi.BootstrapTokenIDKey:               id,
			bootstrapapi.BootstrapTokenSecretKey:           secret,
			bootstrapapi.BootstrapTokenExpirationKey:       t.Expires.Format(time.RFC3339),
			bootstrapapi.BootstrapTokenUsageAuthentication: "true",
			bootstrapapi.BootstrapTokenExtraGroupsKey:      BootstrapGroup,
			bootstrapapi.BootstrapTokenDescriptionKey:      description,
		},
	}
	if _, err := kube.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return Token{}, fmt.Errorf("creating bootstrap token: %w", err)
	}
	return t, nil
}

// ListTokens lists Flotilla's bootstrap tokens, soonest expiry first. Secrets are not included.
func ListTokens(ctx context.Context, kube kubernetes.Interface) ([]Token, error) {
	list, err := kube.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{
		FieldSelector: "type=" + string(bootstrapapi.SecretTypeBootstrapToken),
	})
	if err != nil {
		return nil, err
	}
	var out []Token
	for _, s := range list.Items {
		if string(s.Data[bootstrapapi.BootstrapTokenExtraGroupsKey]) != BootstrapGroup {
			continue
		}
		t := Token{ID: string(s.Data[bootstrapapi.BootstrapTokenIDKey]), Description: string(s.Data[bootstrapapi.BootstrapTokenDescriptionKey])}
		t.Expires, _ = time.Parse(time.RFC3339, string(s.Data[bootstrapapi.BootstrapTokenExpirationKey]))
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Expires.Before(out[j].Expires) })
	return out, nil
}

// DeleteToken deletes a bootstrap token by ID; agents that already joined keep their certificates.
func DeleteToken(ctx context.Context, kube kubernetes.Interface, id string) error {
	if !bootstraputil.IsValidBootstrapTokenID(id) {
		return fmt.Errorf("%q is not a bootstrap token ID (6 characters of a-z, 0-9)", id)
	}
	err := kube.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, bootstraputil.BootstrapTokenSecretName(id), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("no token with ID %s", id)
	}
	return err
}
