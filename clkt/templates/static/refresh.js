// Reload the page every data-refresh seconds (the overview); nothing else runs on these pages.
(function () {
  "use strict";
  var s = parseInt(document.body.getAttribute("data-refresh") || "0", 10);
  if (s > 0) {
    window.setTimeout(function () { window.location.reload(); }, s * 1000);
  }
})();
