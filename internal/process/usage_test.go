package process

import (
	"os"
	"testing"
)

func TestReadUsageOfThisProcess(t *testing.T) {
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	u, err := ReadUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.RSS < int64(len(buf)) || u.PeakRSS < u.RSS {
		t.Fatalf("RSS %d, peak %d: want at least the %d bytes just touched, peak ≥ RSS", u.RSS, u.PeakRSS, len(buf))
	}
	if u.RSSFile <= 0 || u.RSSFile > u.RSS-int64(len(buf)) {
		t.Fatalf("file-backed RSS %d of %d: want some (the test binary's pages), and not the %d anonymous bytes just touched", u.RSSFile, u.RSS, len(buf))
	}
	if u.CPU <= 0 {
		t.Fatalf("CPU %s: this test has run for a while", u.CPU)
	}
	if _, err := ReadUsage(-1); err == nil {
		t.Fatal("want an error for a process that does not exist")
	}
}
