/* hearts-arena competition server: keeps the standings page live.
 *
 * Reads the server-sent events of /events ("standings", "finished",
 * "playing": the public states of the games in play, JSON) and redraws them. Every text is set with textContent, never as HTML.
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

  var SUITS = { C: "\u2663", D: "\u2666", H: "\u2665", S: "\u2660" };

  function drawPlaying(games) {
    var list = document.getElementById("playing");
    if (!list) return;
    while (list.firstChild) list.removeChild(list.firstChild);
    games.forEach(function (g) {
      var li = document.createElement("li");
      var trick = g.trick.map(function (p) {
        var card = String(p[1]);
        return g.seats[p[0]] + " " + card.slice(0, -1) + (SUITS[card.slice(-1)] || card.slice(-1));
      }).join(", ");
      var text = g.deal_key + " (" + g.game_id + "): " + g.seats.map(function (name, s) {
        return name + " " + g.scores[s] + (g.turn === s ? " (to play)" : "");
      }).join(", ") + " \u00b7 hand " + g.hand + ", " + g.phase + (trick ? " \u00b7 trick: " + trick : "");
      li.textContent = text;
      list.appendChild(li);
    });
    var none = document.getElementById("none-playing");
    if (none) none.hidden = games.length > 0;
  }

  if (typeof EventSource === "undefined") return;
  var source = new EventSource("/events");
  source.addEventListener("standings", function (e) { drawStandings(JSON.parse(e.data)); });
  source.addEventListener("finished", function (e) { drawFinished(JSON.parse(e.data)); });
  source.addEventListener("playing", function (e) { drawPlaying(JSON.parse(e.data)); });
})();
