package registration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Keys Flotilla adds to a bootstrap token's Secret (Secret keys allow no slash). The API server's token
// authenticator ignores them; the approver reads them from the Secret of the token a join CSR was filed with
// (its user name is system:bootstrap:<token-id>).
const (
	tokenKeyClusterName = "flotilla-cluster-name"
	tokenKeySingleUse   = "flotilla-single-use"
	tokenKeyLabels      = "flotilla-labels"
	tokenKeyProvider    = "flotilla-provider"
	tokenKeyRegion      = "flotilla-region"
	tokenKeyZones       = "flotilla-zones"
)

// Grant is what a token lets a join do beyond filing its request.
type Grant struct {
	// ClusterName, when set, is the only name the token can join.
	ClusterName string
	// SingleUse tokens are deleted when their first join is approved.
	SingleUse bool
	// Labels, Provider, Region and Zones are what a join may claim for its Cluster; whatever else it asks for
	// is dropped, because policies select clusters by them.
	Labels   map[string]string
	Provider string
	Region   string
	Zones    []string
}

// Validate checks a grant the way the flags that set it are named.
func (g Grant) Validate() error {
	var errs []error
	if g.ClusterName != "" {
		if err := ValidateClusterName(g.ClusterName); err != nil {
			errs = append(errs, fmt.Errorf("--cluster-name: %w", err))
		}
	}
	if _, err := labels.ValidatedSelectorFromSet(g.Labels); err != nil {
		errs = append(errs, fmt.Errorf("--labels: %w", err))
	}
	return errors.Join(errs...)
}

// ValidateClusterName checks a cluster name: a DNS label short enough for its namespace flotilla-cluster-NAME.
func ValidateClusterName(name string) error {
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return fmt.Errorf("cluster name %q is invalid: %s", name, strings.Join(msgs, "; "))
	}
	if len(name) > clusterv1alpha1.MaxClusterNameLength {
		return fmt.Errorf("cluster name %q is %d characters long: a cluster name is at most %d characters, because %s must be a valid namespace name",
			name, len(name), clusterv1alpha1.MaxClusterNameLength, clusterv1alpha1.ClusterNamespace(name))
	}
	return nil
}

// Token is a Kubernetes bootstrap token that lets an agent file its join CSR, and nothing else.
type Token struct {
	ID          string
	Secret      string
	Expires     time.Time
	Description string
	Grant       Grant
}

// String is the token as the agent passes it: ID.SECRET.
func (t Token) String() string { return bootstraputil.TokenFromIDAndSecret(t.ID, t.Secret) }

// CreateToken creates a bootstrap token that expires after ttl and allows what grant says.
func CreateToken(ctx context.Context, kube kubernetes.Interface, ttl time.Duration, description string, grant Grant) (Token, error) {
	if err := grant.Validate(); err != nil {
		return Token{}, err
	}
	raw, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return Token{}, err
	}
	id, secret, _ := strings.Cut(raw, ".")
	t := Token{ID: id, Secret: secret, Expires: time.Now().Add(ttl).UTC().Truncate(time.Second), Description: description, Grant: grant}
	data := map[string]string{
		bootstrapapi.BootstrapTokenIDKey:               id,
		bootstrapapi.BootstrapTokenSecretKey:           secret,
		bootstrapapi.BootstrapTokenExpirationKey:       t.Expires.Format(time.RFC3339),
		bootstrapapi.BootstrapTokenUsageAuthentication: "true",
		bootstrapapi.BootstrapTokenExtraGroupsKey:      BootstrapGroup,
		bootstrapapi.BootstrapTokenDescriptionKey:      description,
	}
	for key, value := range map[string]string{
		tokenKeyClusterName: grant.ClusterName, tokenKeyLabels: labels.Set(grant.Labels).String(),
		tokenKeyProvider: grant.Provider, tokenKeyRegion: grant.Region, tokenKeyZones: strings.Join(grant.Zones, ","),
	} {
		if value != "" {
			data[key] = value
		}
	}
	if grant.SingleUse {
		data[tokenKeySingleUse] = "true"
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstraputil.BootstrapTokenSecretName(id), Namespace: metav1.NamespaceSystem},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		StringData: data,
	}
	if _, err := kube.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return Token{}, fmt.Errorf("creating bootstrap token: %w", err)
	}
	return t, nil
}

// grantOf reads what a token Secret allows.
func grantOf(s *corev1.Secret) Grant {
	g := Grant{
		ClusterName: string(s.Data[tokenKeyClusterName]),
		Provider:    string(s.Data[tokenKeyProvider]),
		Region:      string(s.Data[tokenKeyRegion]),
	}
	g.SingleUse, _ = strconv.ParseBool(string(s.Data[tokenKeySingleUse]))
	g.Labels, _ = labels.ConvertSelectorToLabelsMap(string(s.Data[tokenKeyLabels]))
	if zones := string(s.Data[tokenKeyZones]); zones != "" {
		g.Zones = strings.Split(zones, ",")
	}
	return g
}

// tokenIDOfUser returns the ID of the bootstrap token a request was authenticated with.
func tokenIDOfUser(user string) (string, bool) {
	id, ok := strings.CutPrefix(user, bootstrapapi.BootstrapUserPrefix)
	return id, ok && bootstraputil.IsValidBootstrapTokenID(id)
}

// errTokenGone says the token a join was filed with no longer exists (deleted, expired and cleaned up, or
// spent by a single-use join).
var errTokenGone = errors.New("token gone")

// readGrant reads the grant of the token user filed a join with. Only a NotFound answer is errTokenGone.
func readGrant(ctx context.Context, r client.Reader, user string) (Grant, error) {
	id, ok := tokenIDOfUser(user)
	if !ok {
		return Grant{}, fmt.Errorf("%w: %q is not a bootstrap token user", errTokenGone, user)
	}
	s := &corev1.Secret{}
	err := r.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: bootstraputil.BootstrapTokenSecretName(id)}, s)
	if apierrors.IsNotFound(err) {
		return Grant{}, fmt.Errorf("%w: token %s no longer exists", errTokenGone, id)
	}
	if err != nil {
		return Grant{}, fmt.Errorf("reading token %s: %w", id, err)
	}
	return grantOf(s), nil
}

// spendToken deletes the single-use token user joined with. A token already gone is spent.
func spendToken(ctx context.Context, c client.Client, r client.Reader, user string) error {
	grant, err := readGrant(ctx, r, user)
	if errors.Is(err, errTokenGone) || err == nil && !grant.SingleUse {
		return nil
	}
	if err != nil {
		return err
	}
	id, _ := tokenIDOfUser(user)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: bootstraputil.BootstrapTokenSecretName(id)}}
	if err := c.Delete(ctx, s); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting spent single-use token %s: %w", id, err)
	}
	return nil
}

// narrow keeps of desired's labels and location only what grant allows, and describes what it dropped.
func (g Grant) narrow(desired *clusterv1alpha1.Cluster) (dropped string) {
	var out []string
	var droppedLabels []string
	for k, v := range desired.Labels {
		if allowed, ok := g.Labels[k]; !ok || allowed != v {
			droppedLabels = append(droppedLabels, k+"="+v)
			delete(desired.Labels, k)
		}
	}
	if len(droppedLabels) > 0 {
		sort.Strings(droppedLabels)
		out = append(out, "labels "+strings.Join(droppedLabels, ","))
	}
	if desired.Spec.Provider != "" && desired.Spec.Provider != g.Provider {
		out = append(out, "provider "+desired.Spec.Provider)
		desired.Spec.Provider = ""
	}
	if desired.Spec.Region != "" && desired.Spec.Region != g.Region {
		out = append(out, "region "+desired.Spec.Region)
		desired.Spec.Region = ""
	}
	var zones, droppedZones []string
	for _, z := range desired.Spec.Zones {
		if slices.Contains(g.Zones, z) {
			zones = append(zones, z)
		} else {
			droppedZones = append(droppedZones, z)
		}
	}
	desired.Spec.Zones = zones
	if len(droppedZones) > 0 {
		out = append(out, "zones "+strings.Join(droppedZones, ","))
	}
	return strings.Join(out, "; ")
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
	for i := range list.Items {
		s := &list.Items[i]
		if string(s.Data[bootstrapapi.BootstrapTokenExtraGroupsKey]) != BootstrapGroup {
			continue
		}
		t := Token{ID: string(s.Data[bootstrapapi.BootstrapTokenIDKey]), Description: string(s.Data[bootstrapapi.BootstrapTokenDescriptionKey]), Grant: grantOf(s)}
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
