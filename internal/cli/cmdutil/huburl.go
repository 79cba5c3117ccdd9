package cmdutil

import (
	"fmt"
	"net/url"
	"strconv"
)

// ValidateHubURL checks an address the hub is reached at, as members join it and clients call it:
// https://HOST[:PORT], with nothing after the port (the hub serves at its root).
func ValidateHubURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q: want https://HOST:PORT", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: port %s is not between 1 and 65535", s, p)
		}
	}
	return nil
}
