package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/members"
	"github.com/flotilla-io/flotilla/internal/proxy"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// fleetListPath is the member collection the fleet list subtests read.
const fleetListPath = "/api/v1/namespaces/default/configmaps"

// testFleetList runs against TestProxy's clusters: pxm (a member process, where devToken's user is
// cluster-admin), pxother (a push cluster whose API server is the hub's own, which that user may not proxy
// to) and pxpull (a pull cluster without a tunnel).
func testFleetList(t *testing.T, member kubernetes.Interface, devToken string) {
	ctx := context.Background()
	label := map[string]string{"fleet-list": "yes"}
	for _, c := range []struct {
		kube kubernetes.Interface
		name string
	}{{member, "in-pxm"}, {env.Kube, "in-pxother"}} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: "default", Labels: label}}
		if _, err := c.kube.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	params := map[string]string{"clusters": "pxpull,pxm,pxother", "labelSelector": "fleet-list=yes"}
	dev := rest.AnonymousClientConfig(env.Config)
	dev.BearerToken = devToken

	t.Run("a caller outside the fleet's user groups may not ask for a fleet list", func(t *testing.T) {
		_, err := fleetList(ctx, dev, fleetListPath, params)
		if !apierrors.IsForbidden(err) {
			t.Fatalf("proxy-dev, authenticated but in no fleet user group: %v, want 403", err)
		}
	})
	create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "fleet-list-proxy-dev"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: proxy.FleetListRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "proxy-dev"}}})
	// The proxy keeps a denial for a few seconds.
	testenv.Eventually(t, 30*time.Second, "proxy-dev's fleet list role in effect", func() error {
		_, err := fleetList(ctx, dev, fleetListPath, params)
		return err
	})

	t.Run("a fleet list reads every cluster as the caller, each item annotated with its cluster, failures named", func(t *testing.T) {
		list, err := fleetList(ctx, env.Config, fleetListPath, params)
		if err != nil {
			t.Fatal(err)
		}
		if got := fleetItems(list); !slices.Equal(got, []string{"pxm/in-pxm", "pxother/in-pxother"}) {
			t.Fatalf("items (cluster/name) %v, want pxm/in-pxm and pxother/in-pxother", got)
		}
		if kind := list.Items[0]["kind"]; kind != "ConfigMap" {
			t.Fatalf("an item's kind is %v, want ConfigMap", kind)
		}
		want := []string{"pxm: 1", "pxother: 1", "pxpull: 503 no tunnel for cluster pxpull"}
		if got := fleetClusters(list); !slices.Equal(got, want) {
			t.Fatalf("clusters %q, want %q", got, want)
		}
	})

	t.Run("a caller allowed clusters/proxy on one cluster reads only that one; the others are named, not read", func(t *testing.T) {
		list, err := fleetList(ctx, dev, fleetListPath, params)
		if err != nil {
			t.Fatal(err)
		}
		if got := fleetItems(list); !slices.Equal(got, []string{"pxm/in-pxm"}) {
			t.Fatalf("items (cluster/name) %v, want only pxm/in-pxm", got)
		}
		want := []string{"pxm: 1", "pxother: 403 may not get clusters/proxy on cluster pxother", "pxpull: 403 may not get clusters/proxy on cluster pxpull"}
		if got := fleetClusters(list); !slices.Equal(got, want) {
			t.Fatalf("clusters %q, want %q", got, want)
		}
	})

	t.Run("a fleet list names no cluster to a caller who may neither reach it nor list the hub's Clusters", func(t *testing.T) {
		list, err := fleetList(ctx, dev, fleetListPath, map[string]string{"labelSelector": "fleet-list=yes"})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fleetClusters(list), []string{"pxm: 1"}; !slices.Equal(got, want) {
			t.Fatalf("clusters %q of a list over all clusters, want only %q", got, want)
		}
		list, err = fleetList(ctx, dev, fleetListPath, map[string]string{"clusters": "pxm,no-such-cluster"})
		if err != nil {
			t.Fatalf("a cluster the caller may not reach is reported as such whether it exists or not: %v", err)
		}
		if got := fleetClusters(list); len(got) != 2 || got[0] != "no-such-cluster: 403 may not get clusters/proxy on cluster no-such-cluster" {
			t.Fatalf("clusters %q", got)
		}
	})

	t.Run("limit is passed on to each cluster, and a cluster with more says so", func(t *testing.T) {
		// pxm's default namespace holds in-pxm and kube-root-ca.crt.
		list, err := fleetList(ctx, env.Config, fleetListPath, map[string]string{"clusters": "pxm", "limit": "1"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Clusters) != 1 || list.Clusters[0].Items != 1 || !list.Clusters[0].Truncated {
			t.Fatalf("clusters %+v, want pxm with 1 item, truncated", list.Clusters)
		}
	})

	t.Run("a cluster that does not answer is reported after clusterTimeout, the others listed", func(t *testing.T) {
		// pxsilent's API server accepts connections and never answers, as a frozen member does.
		silent, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { silent.Close() })
		go func() {
			for {
				conn, err := silent.Accept()
				if err != nil {
					return
				}
				t.Cleanup(func() { conn.Close() })
			}
		}()
		pushCluster(t, "pxsilent", map[string][]byte{members.SecretKeyToken: []byte("unused")}, func(s *clusterv1alpha1.ClusterSpec) {
			s.APIEndpoint = "https://" + silent.Addr().String()
			s.InsecureSkipTLSVerification = true
		})
		params := map[string]string{"clusters": "pxm,pxsilent", "labelSelector": "fleet-list=yes", "clusterTimeout": "2s"}
		var list *proxyv1alpha1.FleetList
		// Until the proxy's cache knows pxsilent (a cluster it does not know is 404).
		testenv.Eventually(t, 10*time.Second, "pxsilent known to the fleet list", func() error {
			list, err = fleetList(ctx, env.Config, fleetListPath, params)
			return err
		})
		if got := fleetItems(list); !slices.Equal(got, []string{"pxm/in-pxm"}) {
			t.Fatalf("items (cluster/name) %v, want pxm/in-pxm", got)
		}
		want := []string{"pxm: 1", "pxsilent: 504 no answer within 2s"}
		if got := fleetClusters(list); !slices.Equal(got, want) {
			t.Fatalf("clusters %q, want %q", got, want)
		}
	})

	t.Run("bad requests are refused before any cluster is read", func(t *testing.T) {
		for _, c := range []struct {
			path   string
			params map[string]string
			code   int
		}{
			{"/api/v1/namespaces/default/configmaps/in-pxm", nil, http.StatusBadRequest},
			{"/healthz", nil, http.StatusBadRequest},
			{fleetListPath, map[string]string{"watch": "true"}, http.StatusBadRequest},
			{fleetListPath, map[string]string{"continue": "x"}, http.StatusBadRequest},
			{fleetListPath, map[string]string{"clusters": manyNames(1000)}, http.StatusBadRequest},
			{fleetListPath, map[string]string{"clusterTimeout": "2h"}, http.StatusBadRequest},
			{fleetListPath, map[string]string{"clusters": "Not_A_Name"}, http.StatusBadRequest},
			{fleetListPath, map[string]string{"clusters": "pxm,no-such-cluster"}, http.StatusNotFound},
		} {
			_, err := fleetList(ctx, env.Config, c.path, c.params)
			if status, ok := err.(apierrors.APIStatus); !ok || int(status.Status().Code) != c.code {
				t.Errorf("%s %v: want %d, got %v", c.path, c.params, c.code, err)
			}
		}
	})
}

// manyNames is n distinct cluster names joined with commas.
func manyNames(n int) string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("c%d", i)
	}
	return strings.Join(names, ",")
}

// fleetList reads the fleet list of memberPath through the hub as the user of cfg.
func fleetList(ctx context.Context, cfg *rest.Config, memberPath string, params map[string]string) (*proxyv1alpha1.FleetList, error) {
	req := kubernetes.NewForConfigOrDie(cfg).Discovery().RESTClient().Get().AbsPath(proxyv1alpha1.FleetListPath(memberPath))
	for k, v := range params {
		req = req.Param(k, v)
	}
	raw, err := req.DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	list := &proxyv1alpha1.FleetList{}
	return list, json.Unmarshal(raw, list)
}

// fleetItems lists a fleet list's items as CLUSTER/NAME, the cluster read from the annotation.
func fleetItems(list *proxyv1alpha1.FleetList) []string {
	var out []string
	for _, item := range list.Items {
		meta, _ := item["metadata"].(map[string]any)
		annotations, _ := meta["annotations"].(map[string]any)
		out = append(out, annotations[clusterv1alpha1.AnnotationCluster].(string)+"/"+meta["name"].(string))
	}
	return out
}

// fleetClusters sums up a fleet list's clusters as "NAME: ITEMS" or "NAME: CODE MESSAGE-FRAGMENT" — the fragment
// cut to the words the tests expect, so that a message's details may change.
func fleetClusters(list *proxyv1alpha1.FleetList) []string {
	var out []string
	for _, c := range list.Clusters {
		if c.Error == nil {
			out = append(out, c.Name+": "+strconv.Itoa(c.Items))
			continue
		}
		fragment := ""
		for _, f := range []string{"no tunnel for cluster " + c.Name, "may not get clusters/proxy on cluster " + c.Name, "no answer within 2s"} {
			if strings.Contains(c.Error.Message, f) {
				fragment = f
			}
		}
		if fragment == "" {
			fragment = c.Error.Message
		}
		out = append(out, c.Name+": "+strconv.Itoa(int(c.Error.Code))+" "+fragment)
	}
	return out
}
