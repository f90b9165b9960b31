// The vote page's keyboard shortcuts (service/web/templates/vote.html): 1 or ← Answer 1 is better,
// 2 or → Answer 2 is better, t a tie, b both bad, n or s skip the pair. Each presses the page's
// own button (or follows the skip link), so a vote goes through the same form as a click; the
// page works without this script. A form is sent once: a second key press or click while the
// next page loads does nothing (the server would count it once anyway).
(function () {
  "use strict";
  var form = document.getElementById("vote-form");
  if (!form) { return; }
  var VERDICTS = { "1": "left", "ArrowLeft": "left", "2": "right", "ArrowRight": "right", "t": "tie", "b": "both_bad" };
  var SKIP = { "n": true, "s": true };
  var hint = document.getElementById("vote-keys");
  if (hint) { hint.hidden = false; }
  var sent = false;

  form.addEventListener("submit", function (event) {
    if (sent) { event.preventDefault(); return; }
    sent = true;
    form.setAttribute("aria-busy", "true");
  });

  window.addEventListener("pageshow", function (event) {
    if (event.persisted) { sent = false; form.removeAttribute("aria-busy"); }  // back to a page kept in memory
  });

  function typing(target) {
    return target && target.closest && target.closest("input, textarea, select, [contenteditable]");
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) { return; }
    var key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    if (SKIP[key]) {
      var skip = document.getElementById("vote-skip");
      if (skip && !sent) { event.preventDefault(); sent = true; skip.click(); }
      return;
    }
    var verdict = VERDICTS[key];
    if (!verdict) { return; }
    var button = form.querySelector('button[name="verdict"][value="' + verdict + '"]');
    if (!button) { return; }
    event.preventDefault();
    if (form.requestSubmit) { form.requestSubmit(button); } else { button.click(); }
  });
})();
