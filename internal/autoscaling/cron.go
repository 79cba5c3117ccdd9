package autoscaling

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
)

// Schedule is a CronFederatedHPA rule's schedule read in its time zone.
type Schedule struct {
	cron.Schedule
}

// ParseSchedule reads a rule's schedule (five standard fields or a descriptor such as @hourly or
// @every 10m) in its time zone (UTC when empty). The zone belongs in timeZone, not in the schedule.
func ParseSchedule(schedule string, timeZone *string) (Schedule, error) {
	if strings.HasPrefix(schedule, "TZ=") || strings.HasPrefix(schedule, "CRON_TZ=") {
		return Schedule{}, fmt.Errorf("schedule %q names a time zone: set timeZone instead", schedule)
	}
	zone := "UTC"
	if timeZone != nil && *timeZone != "" {
		zone = *timeZone
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return Schedule{}, fmt.Errorf("unknown time zone %q", zone)
	}
	s, err := cron.ParseStandard("CRON_TZ=" + loc.String() + " " + schedule)
	if err != nil {
		return Schedule{}, fmt.Errorf("schedule %q: %v", schedule, err)
	}
	return Schedule{s}, nil
}

// holds says whether t is one of the schedule's times (always true for @every, which has no fixed times).
func (s Schedule) holds(t time.Time) bool {
	if _, every := s.Schedule.(cron.ConstantDelaySchedule); every {
		return true
	}
	return s.Next(t.Add(-time.Second)).Equal(t)
}

// Due decides a rule's turn at now from its recorded next run: due is the scheduled time to run now (zero
// when nothing is due), next the run after. A rule seen for the first time, or whose recorded next run is no
// time of its schedule any more (the schedule changed), waits for its next time from now; runs missed while
// the hub was down are made up by one run, for the latest missed time.
func (s Schedule) Due(recorded *metav1.Time, now time.Time) (due, next time.Time) {
	if recorded == nil || !s.holds(recorded.Time) || s.Next(now).Before(recorded.Time) {
		return time.Time{}, s.Next(now)
	}
	if recorded.After(now) {
		return time.Time{}, recorded.Time
	}
	due = recorded.Time
	for t := s.Next(due); !t.After(now); t = s.Next(t) {
		due = t
	}
	return due, s.Next(now)
}

// historyLimits are a rule's limits with their defaults.
func historyLimits(rule autoscalingv1alpha1.CronFederatedHPARule) (successful, failed int) {
	successful, failed = 3, 3
	if rule.SuccessfulHistoryLimit != nil {
		successful = int(*rule.SuccessfulHistoryLimit)
	}
	if rule.FailedHistoryLimit != nil {
		failed = int(*rule.FailedHistoryLimit)
	}
	return successful, failed
}

// Remember records a run in a rule's history, newest first, within the rule's limits.
func Remember(h *autoscalingv1alpha1.ExecutionHistory, rule autoscalingv1alpha1.CronFederatedHPARule, ok *autoscalingv1alpha1.SuccessfulExecution, failed *autoscalingv1alpha1.FailedExecution) {
	maxOK, maxFailed := historyLimits(rule)
	if ok != nil {
		h.SuccessfulExecutions = append([]autoscalingv1alpha1.SuccessfulExecution{*ok}, h.SuccessfulExecutions...)
	}
	if failed != nil {
		h.FailedExecutions = append([]autoscalingv1alpha1.FailedExecution{*failed}, h.FailedExecutions...)
	}
	if len(h.SuccessfulExecutions) > maxOK {
		h.SuccessfulExecutions = h.SuccessfulExecutions[:maxOK]
	}
	if len(h.FailedExecutions) > maxFailed {
		h.FailedExecutions = h.FailedExecutions[:maxFailed]
	}
	if len(h.SuccessfulExecutions) == 0 {
		h.SuccessfulExecutions = nil
	}
	if len(h.FailedExecutions) == 0 {
		h.FailedExecutions = nil
	}
}
