package autoscaling

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
)

// TestParseSchedule: five fields and descriptors parse, in UTC or the rule's zone; a zone in the schedule,
// an unknown zone and a wrong expression do not.
func TestParseSchedule(t *testing.T) {
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		schedule, zone string
		next           time.Time
		err            string
	}{
		{"0 8 * * *", "", time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC), ""},
		{"0 8 * * *", "Asia/Tokyo", time.Date(2026, 1, 1, 23, 0, 0, 0, time.UTC), ""},
		{"@hourly", "", time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC), ""},
		{"*/15 * * * *", "Europe/Paris", time.Date(2026, 1, 1, 0, 15, 0, 0, time.UTC), ""},
		{"61 * * * *", "", time.Time{}, "61 * * * *"},
		{"0 0 8 * * *", "", time.Time{}, "expected exactly 5 fields"},
		{"TZ=UTC 0 8 * * *", "", time.Time{}, "set timeZone instead"},
		{"0 8 * * *", "Mars/Olympus", time.Time{}, `unknown time zone "Mars/Olympus"`},
	}
	for _, tt := range tests {
		t.Run(tt.schedule+" "+tt.zone, func(t *testing.T) {
			s, err := ParseSchedule(tt.schedule, &tt.zone)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || !s.Next(from).Equal(tt.next) {
				t.Fatalf("next = %v (%v), want %v", s.Next(from), err, tt.next)
			}
		})
	}
}

// TestDue: a rule seen first waits for its next time; a recorded time that has come is due; missed times
// make one run, for the latest; a recorded time that is no longer one of the schedule's is replaced.
func TestDue(t *testing.T) {
	s, err := ParseSchedule("*/10 * * * *", nil)
	if err != nil {
		t.Fatal(err)
	}
	at := func(h, m int) time.Time { return time.Date(2026, 1, 1, h, m, 0, 0, time.UTC) }
	rec := func(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }
	tests := []struct {
		name      string
		recorded  *metav1.Time
		now       time.Time
		due, next time.Time
	}{
		{"first sight", nil, at(9, 3), time.Time{}, at(9, 10)},
		{"not yet", rec(at(9, 10)), at(9, 7), time.Time{}, at(9, 10)},
		{"on time", rec(at(9, 10)), at(9, 10), at(9, 10), at(9, 20)},
		{"a little late", rec(at(9, 10)), at(9, 10).Add(2 * time.Second), at(9, 10), at(9, 20)},
		{"missed three", rec(at(9, 10)), at(9, 35), at(9, 30), at(9, 40)},
		{"the schedule changed", rec(at(9, 7)), at(9, 5), time.Time{}, at(9, 10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			due, next := s.Due(tt.recorded, tt.now)
			if !due.Equal(tt.due) || !next.Equal(tt.next) {
				t.Fatalf("= due %v, next %v; want due %v, next %v", due, next, tt.due, tt.next)
			}
		})
	}
}

// TestRemember: runs are kept newest first within each rule's limits, three of each by default.
func TestRemember(t *testing.T) {
	h := &autoscalingv1alpha1.ExecutionHistory{RuleName: "r"}
	rule := autoscalingv1alpha1.CronFederatedHPARule{Name: "r", FailedHistoryLimit: new(int32(1))}
	for i := range 5 {
		n := int32(i)
		Remember(h, rule, &autoscalingv1alpha1.SuccessfulExecution{AppliedReplicas: &n}, nil)
		Remember(h, rule, nil, &autoscalingv1alpha1.FailedExecution{Message: string(rune('a' + i))})
	}
	if len(h.SuccessfulExecutions) != 3 || *h.SuccessfulExecutions[0].AppliedReplicas != 4 || *h.SuccessfulExecutions[2].AppliedReplicas != 2 {
		t.Fatalf("successful = %+v, want 4, 3, 2", h.SuccessfulExecutions)
	}
	if len(h.FailedExecutions) != 1 || h.FailedExecutions[0].Message != "e" {
		t.Fatalf("failed = %+v, want the last", h.FailedExecutions)
	}
	Remember(h, autoscalingv1alpha1.CronFederatedHPARule{SuccessfulHistoryLimit: new(int32(0))}, nil, nil)
	if h.SuccessfulExecutions != nil {
		t.Fatalf("a limit of 0 kept %+v", h.SuccessfulExecutions)
	}
}
