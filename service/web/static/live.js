// Keeps a page current without reloading it (service/web/pages/render.py): every few seconds it asks
// GET /api/revision, and when the store's mark moved it fetches the page again and swaps in each
// [data-live] region whose HTML changed, keeping the scroll position and any open <details>; a page
// that gained a region (a board computed for the first time) is reloaded whole. A page served with
// a part still being computed carries a mark ending "~pending", which never equals the store's, so
// it is fetched again at the next look until it is current.
// Without JavaScript nothing reloads by itself; the stamp says so.
(function () {
  "use strict";
  var PERIOD_MS = 4000;
  var stamp = document.getElementById("stamp");
  if (!stamp) { return; }
  var nojs = stamp.querySelector(".nojs");
  if (nojs) { nojs.remove(); }
  var mark = stamp.getAttribute("data-mark");
  var busy = false;

  function openDetails(root) {
    var open = {};
    root.querySelectorAll("details[id]").forEach(function (d) { open[d.id] = d.open; });
    return open;
  }

  function swap(fresh) {
    var x = window.scrollX, y = window.scrollY;
    var open = openDetails(document);
    var changed = [];
    var gained = false;
    fresh.querySelectorAll("[data-live]").forEach(function (next) {
      var name = next.getAttribute("data-live");
      var here = document.querySelector('[data-live="' + name + '"]');
      if (!here) { gained = true; return; }
      if (here.innerHTML === next.innerHTML) { return; }
      if (here.contains(document.activeElement) && document.activeElement !== document.body) { return; }
      here.innerHTML = next.innerHTML;
      changed.push(here);
    });
    Object.keys(open).forEach(function (id) {
      var d = document.getElementById(id);
      if (d) { d.open = open[id]; }
    });
    window.scrollTo(x, y);
    if (gained) { window.location.reload(); return; }
    if (changed.length) {
      document.dispatchEvent(new CustomEvent("live:updated", { detail: { regions: changed } }));
    }
  }

  function say(revision) {
    var now = new Date();
    var hh = String(now.getHours()).padStart(2, "0");
    var mm = String(now.getMinutes()).padStart(2, "0");
    var ss = String(now.getSeconds()).padStart(2, "0");
    stamp.textContent = "updated " + hh + ":" + mm + ":" + ss + ", revision " + revision;
    stamp.setAttribute("data-revision", String(revision));
  }

  function poll() {
    if (busy || document.hidden) { return; }
    busy = true;
    fetch("/api/revision", { cache: "no-store", credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (now) {
        if (!now || now.mark === mark) { if (now) { say(now.revision); } return null; }
        return fetch(window.location.href, { cache: "no-store", credentials: "same-origin" })
          .then(function (r) { return r.ok ? r.text() : null; })
          .then(function (text) {
            if (text === null) { return; }
            var fresh = new DOMParser().parseFromString(text, "text/html");
            swap(fresh);
            var shown = fresh.getElementById("stamp");
            mark = (shown && shown.getAttribute("data-mark")) || now.mark;
            stamp.setAttribute("data-mark", mark);
            say(now.revision);
          });
      })
      .catch(function () { /* the next poll tries again */ })
      .then(function () { busy = false; });
  }

  window.setInterval(poll, PERIOD_MS);
})();
