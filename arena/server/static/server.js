/* hearts-arena competition server: keeps the standings page live.
 *
 * Reads the server-sent events of /events ("standings", "finished", JSON) and
 * redraws the table. Every text is set with textContent, never as HTML.
 */
(function () {
  "use strict";
  var COLUMNS = ["rank", "participant", "submission", "status", "games", "mu", "sigma", "conservative", "note"];

  function cell(row, key) {
    var value = row[key];
    if (key === "submission" && value === null) return "house";
    if (key === "mu" || key === "sigma" || key === "conservative") return Number(value).toFixed(2);
    return value === null || value === undefined ? "" : String(value);
  }

  function drawStandings(data) {
    var body = document.querySelector("#standings tbody");
    if (!body) return;
    while (body.firstChild) body.removeChild(body.firstChild);
    data.rows.forEach(function (row) {
      var tr = document.createElement("tr");
      COLUMNS.forEach(function (key) {
        var td = document.createElement("td");
        if (key === "participant" || key === "note") td.className = "name";
        td.textContent = cell(row, key);
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    document.getElementById("rated-through").textContent = String(data.rated_through);
    document.getElementById("in-play").textContent = String(data.tables_in_play);
    var empty = document.getElementById("empty");
    if (empty) empty.hidden = data.rows.length > 0;
  }

  function drawFinished(tables) {
    var list = document.getElementById("finished");
    if (!list) return;
    while (list.firstChild) list.removeChild(list.firstChild);
    tables.forEach(function (t) {
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.href = "/tables/" + encodeURIComponent(String(t.number));
      a.textContent = "Table " + t.number;
      li.appendChild(a);
      li.appendChild(document.createTextNode(": " + t.seating.join(", ")));
      list.appendChild(li);
    });
  }

  if (typeof EventSource === "undefined") return;
  var source = new EventSource("/events");
  source.addEventListener("standings", function (e) { drawStandings(JSON.parse(e.data)); });
  source.addEventListener("finished", function (e) { drawFinished(JSON.parse(e.data)); });
})();
