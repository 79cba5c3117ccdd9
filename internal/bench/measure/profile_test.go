package measure

import (
	"os"
	"strings"
	"testing"
)

func TestValidateProfileDir(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/file"
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"": "", dir: "", dir + "/new/profiles": "", file: "--profile-dir " + file + ": not a directory",
		file + "/below": "--profile-dir " + file + "/below: stat"} {
		err := ValidateProfileDir(path)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("ValidateProfileDir(%q) = %v, want %q", path, err, want)
		}
	}
}
