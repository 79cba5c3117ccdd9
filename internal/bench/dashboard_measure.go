package bench

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/bench/hollow"
	"github.com/flotilla-io/flotilla/internal/bench/measure"
	"github.com/flotilla-io/flotilla/internal/dashboard"
)

// listRepeats is how many times the reads of each page are timed: they explain the page times, and each
// read of the workloads page takes about as long as the page.
const listRepeats = 10

// pageReads are the lists each page makes of the hub, in the order it makes them.
var pageReads = map[string]func(ctx context.Context, c client.Client) error{
	"fleet": func(ctx context.Context, c client.Client) error {
		if err := c.List(ctx, &clusterv1alpha1.ClusterList{}); err != nil {
			return err
		}
		return c.List(ctx, &coordinationv1.LeaseList{})
	},
	"workloads": func(ctx context.Context, c client.Client) error {
		if err := c.List(ctx, &workv1alpha1.ClusterResourceBindingList{}); err != nil {
			return err
		}
		if err := c.List(ctx, &workv1alpha1.ResourceBindingList{}); err != nil {
			return err
		}
		// The policy of each row comes from its template's labels, read as metadata only.
		templates := &metav1.PartialObjectMetadataList{}
		templates.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("DeploymentList"))
		return c.List(ctx, templates)
	},
}

// timeReads times the lists behind each page, made by admin from this process one after another: the part
// of the page's time that is the hub answering and the client decoding, the rest being the page's own work
// and its rendering.
func timeReads(ctx context.Context, admin client.Client) (map[string]map[string]float64, error) {
	out := map[string]map[string]float64{}
	for name, read := range pageReads {
		var ds []time.Duration
		for range listRepeats {
			start := time.Now()
			if err := read(ctx, admin); err != nil {
				return nil, err
			}
			ds = append(ds, time.Since(start))
		}
		out[name] = measure.Percentiles(ds)
	}
	return out, nil
}

// WatchedMetadata is what the dashboard's change watch holds: the metadata of every object of the kinds it
// watches, as JSON bytes, and without managedFields (which the watch keeps and never reads).
type WatchedMetadata struct {
	Objects                   int `json:"objects"`
	Bytes                     int `json:"bytes"`
	BytesWithoutManagedFields int `json:"bytesWithoutManagedFields"`
}

// measureWatched lists the metadata of every kind the dashboard watches, as its informers do.
func measureWatched(ctx context.Context, cfg *rest.Config) (WatchedMetadata, error) {
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return WatchedMetadata{}, err
	}
	var w WatchedMetadata
	for _, gvr := range dashboard.Watched() {
		list, err := meta.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			return WatchedMetadata{}, err
		}
		for i := range list.Items {
			m := &list.Items[i]
			full, err := json.Marshal(m)
			if err != nil {
				return WatchedMetadata{}, err
			}
			m.ManagedFields = nil
			stripped, err := json.Marshal(m)
			if err != nil {
				return WatchedMetadata{}, err
			}
			w.Objects++
			w.Bytes += len(full)
			w.BytesWithoutManagedFields += len(stripped)
		}
	}
	return w, nil
}

// settled lets the hub run for settle, waits until every cluster is Ready, and returns its memory at rest.
func settled(ctx context.Context, fleet *hollowFleet, settle time.Duration) (RSS, error) {
	if err := sleep(ctx, settle); err != nil {
		return RSS{}, err
	}
	if err := hollow.WaitAllReady(ctx, fleet.admin, len(fleet.agents)); err != nil {
		return RSS{}, err
	}
	return sampleRSS(ctx, fleet)
}

// sampleRSS reads the hub's resident memory every second for five seconds.
func sampleRSS(ctx context.Context, fleet *hollowFleet) (RSS, error) {
	const samples = 5
	var mib []float64
	for i := range samples {
		u, err := fleet.hub.Usage()
		if err != nil {
			return RSS{}, err
		}
		mib = append(mib, float64(u.RSS)/(1<<20))
		if i < samples-1 {
			if err := sleep(ctx, time.Second); err != nil {
				return RSS{}, err
			}
		}
	}
	return rssOf(mib), nil
}

func rssOf(mib []float64) RSS {
	sorted := slices.Sorted(slices.Values(mib))
	return RSS{MedianMiB: sorted[len(sorted)/2], MaxMiB: sorted[len(sorted)-1]}
}
