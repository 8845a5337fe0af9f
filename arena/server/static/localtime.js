/* hearts-arena competition server: shows each <time class="local"> in the
 * reader's own time zone beside the UTC text the page carries. The time's
 * datetime attribute is ISO 8601 in UTC; text is set with textContent only.
 */
(function () {
  "use strict";
  var times = document.querySelectorAll("time.local");
  for (var i = 0; i < times.length; i++) {
    var when = new Date(times[i].getAttribute("datetime"));
    if (isNaN(when.getTime())) continue;
    var out = document.createElement("span");
    out.className = "local-time";
    out.textContent = " (your time: " + when.toLocaleString() + ")";
    times[i].parentNode.insertBefore(out, times[i].nextSibling);
  }
})();
