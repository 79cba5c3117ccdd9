package integration

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controlplane"
)

// etcdOf returns a client of the test hub's etcd with the given TLS identity (nil: plain HTTP).
func etcdOf(t *testing.T, identity *controlplane.EtcdTLS) *clientv3.Client {
	t.Helper()
	if len(env.EtcdServers) == 0 || env.EtcdTLS == nil {
		t.Fatal("the test hub does not say where its etcd is")
	}
	endpoint := env.EtcdServers[0]
	var tlsConfig *tls.Config
	if identity == nil {
		endpoint = strings.Replace(endpoint, "https://", "http://", 1)
	} else {
		var err error
		tlsConfig, err = transport.TLSInfo{TrustedCAFile: identity.CAFile, CertFile: identity.CertFile, KeyFile: identity.KeyFile}.ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tlsConfig, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestHubEtcdIsNotAnOpenDoor: the hub's etcd refuses plain HTTP and TLS clients without a certificate of its
// own CA; kube-apiserver's identity gets in.
func TestHubEtcdIsNotAnOpenDoor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !strings.HasPrefix(env.EtcdServers[0], "https://127.0.0.1:") {
		t.Fatalf("the hub's etcd serves at %s, not TLS on loopback", env.EtcdServers[0])
	}
	if _, err := http.Get(strings.Replace(env.EtcdServers[0], "https://", "http://", 1) + "/version"); err == nil {
		t.Fatal("etcd answered plain HTTP")
	}
	for name, identity := range map[string]*controlplane.EtcdTLS{
		"plain HTTP":                       nil,
		"TLS without a client certificate": {CAFile: env.EtcdTLS.CAFile},
	} {
		short, cancelShort := context.WithTimeout(ctx, 5*time.Second)
		_, err := etcdOf(t, identity).Get(short, "/registry/secrets", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		cancelShort()
		if err == nil {
			t.Errorf("etcd served a client over %s", name)
		}
	}
	if _, err := etcdOf(t, env.EtcdTLS).Get(ctx, "/registry/namespaces/default"); err != nil {
		t.Fatalf("kube-apiserver's etcd identity is refused: %v", err)
	}
}

// TestSecretsAndWorksEncryptedAtRest: a Secret, and a Work that carries one to a member, are stored in etcd
// encrypted: read straight from etcd, neither shows the secret value.
func TestSecretsAndWorksEncryptedAtRest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const canary = "canary-value-that-must-not-be-stored-in-plaintext"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "encrypted"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns.Name},
		StringData: map[string]string{"password": canary},
	}
	if err := env.Client.Create(ctx, secret.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	manifest, err := json.Marshal(secret)
	if err != nil {
		t.Fatal(err)
	}
	work := &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns.Name},
		Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{
			Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: manifest}}},
		}},
	}
	if err := env.Client.Create(ctx, work); err != nil {
		t.Fatal(err)
	}
	raw := etcdOf(t, env.EtcdTLS)
	for _, key := range []string{"/registry/secrets/encrypted/db", "/registry/work.flotilla.io/works/encrypted/db"} {
		resp, err := raw.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 {
			t.Fatalf("%s not found in etcd", key)
		}
		value := string(resp.Kvs[0].Value)
		if !strings.HasPrefix(value, "k8s:enc:secretbox:v1:") || strings.Contains(value, canary) {
			t.Errorf("%s is stored in plaintext: %.80q", key, value)
		}
	}
	// And the API still reads it back.
	got := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "db"}, got); err != nil || string(got.Data["password"]) != canary {
		t.Fatalf("secret not read back: %v %q", err, got.Data["password"])
	}
}

// TestProfilingOff: kube-apiserver serves no /debug/pprof, not even to the admin.
func TestProfilingOff(t *testing.T) {
	body, err := env.Kube.Discovery().RESTClient().Get().AbsPath("/debug/pprof/").DoRaw(context.Background())
	if err == nil {
		t.Fatalf("/debug/pprof/ is served:\n%.200s", body)
	}
}
