// Live updates: the server says "change" when something this person may see changed; the page then fetches
// its main element again as them. Nothing else is loaded, and nothing leaves this host.
(function () {
  "use strict";
  var live = document.getElementById("live");
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.href, { headers: { "X-Dashboard-Partial": "1" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var main = document.getElementById("main");
        // Keep open diffs open and the focused link focused across a refresh.
        var open = Array.prototype.map.call(main.querySelectorAll("details[open] summary"), function (s) { return s.textContent; });
        var focused = document.activeElement && main.contains(document.activeElement) ? document.activeElement.getAttribute("href") : null;
        main.innerHTML = html;
        main.querySelectorAll("details summary").forEach(function (s) { if (open.indexOf(s.textContent) >= 0) { s.parentNode.open = true; } });
        if (focused) { var el = main.querySelector('[href="' + focused + '"]'); if (el) { el.focus(); } }
        live.textContent = "live · updated " + new Date().toLocaleTimeString();
      })
      .catch(function () { live.textContent = "update failed; retrying on the next change"; })
      .finally(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  var source = new EventSource(document.body.dataset.events);
  source.onopen = function () { live.textContent = "live"; };
  source.onerror = function () { live.textContent = "reconnecting…"; };
  source.addEventListener("change", refresh);
})();
