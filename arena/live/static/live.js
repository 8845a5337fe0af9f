// The live page: every text from the arena (and so from bots) is set with
// textContent, never parsed as HTML. All requests go to this page's origin.
"use strict";

const params = new URLSearchParams(window.location.search);
const token = params.get("token");
const query = token ? "?token=" + encodeURIComponent(token) : "";
const SUITS = { S: "♠", H: "♥", D: "♦", C: "♣" };
const SEAT_PLACES = ["south", "west", "north", "east"];
const state = { info: null, tables: [], clockOffset: 0, delay: 0 };

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function cardNode(name) {
  const text = String(name);
  const suit = text.slice(-1);
  const node = el("span", "card suit-" + (SUITS[suit] ? suit : "x"));
  node.textContent = text.slice(0, -1) + (SUITS[suit] || suit);
  return node;
}

function setStatus(text) {
  document.getElementById("status").textContent = text;
}

function renderInfo(info) {
  state.info = info;
  state.delay = Number(info.delay) || 0;
  const note = document.getElementById("note");
  const parts = [];
  if (info.note) parts.push(info.note);
  if (state.delay > 0) parts.push("The view is held back " + state.delay + " s.");
  note.textContent = parts.join(" ");
  note.hidden = parts.length === 0;
  document.getElementById("tables-section").hidden = info.mode !== "live";
  document.querySelector(".live-tag").textContent = info.mode === "live" ? "live" : "finished games";
}

function renderStandings(part) {
  const body = document.querySelector("#standings tbody");
  body.replaceChildren();
  for (const row of part.rows) {
    const tr = el("tr", row.disqualified ? "disqualified" : "");
    tr.dataset.rank = row.rank;
    const name = el("td", "name", row.name);
    if (row.disqualified) name.append(" ", el("strong", "tag", "disqualified"));
    tr.append(el("td", "", row.rank), name);
    const cols = ["conservative", "mu", "sigma", "games", "wins", "mean_rank"];
    for (const c of cols) tr.append(el("td", "", row[c]));
    const pph = el("td", "", row.points_per_hand + " ");
    pph.append(el("span", "ci", row.points_interval));
    const dup = el("td", "", row.duplicate + " ");
    dup.append(el("span", "ci", row.duplicate_interval));
    tr.append(pph, dup, el("td", "", row.moons), el("td", "", row.queens), el("td", "", row.faults));
    body.append(tr);
  }
  const verdict = document.getElementById("verdict");
  verdict.textContent = part.verdict.text;
  verdict.className = "verdict " + (part.verdict.settled ? "settled" : "unsettled");
  document.getElementById("prefix").textContent =
    "Rated in schedule order over the first " + part.prefix + " games of the schedule, all finished (" +
    part.played + " of " + part.games_total + " games finished). Refreshed at most once a second.";
}

function seatBox(t, seat) {
  const box = el("div", "seat seat-" + SEAT_PLACES[seat]);
  if (t.turn === seat || (t.kind === "pass" && t.phase === "pass" && t.deadline)) box.classList.add("turn");
  box.append(el("div", "seat-name", t.seats[seat]));
  const line = el("div", "seat-line");
  line.append(el("span", "held", t.held[seat] + (t.held[seat] === 1 ? " card" : " cards")), el("span", "", " · tricks " + t.tricks[seat]),
    el("span", "", " · points " + t.points[seat]));
  box.append(line);
  box.append(el("div", "seat-score", "score " + t.scores[seat]));
  if (t.fault_counts[seat]) box.append(el("div", "seat-faults", t.fault_counts[seat] + " faults"));
  const clock = el("div", "clock");
  if (t.deadline && (t.turn === seat || (t.kind === "pass" && t.phase === "pass"))) {
    clock.dataset.deadline = t.deadline;
  }
  box.append(clock);
  return box;
}

function tableNode(t) {
  const node = el("article", "table");
  node.dataset.game = t.game_id;
  const head = el("header", "table-head");
  head.append(el("strong", "", t.game_id));
  const phase = t.phase === "pass" ? "passing " + t.direction : t.phase === "over" ? "game over" :
    t.phase === "start" ? "starting" : "trick " + Math.min(13, t.tricks.reduce((a, b) => a + b, 0) + (t.trick_winner === null ? 1 : 0));
  head.append(el("span", "", " · hand " + t.hand + " · " + phase));
  node.append(head);
  const felt = el("div", "felt");
  for (let seat = 0; seat < 4; seat++) felt.append(seatBox(t, seat));
  const trick = el("div", "trick");
  for (const [seat, name] of t.trick) {
    const slot = el("div", "slot slot-" + SEAT_PLACES[seat]);
    const c = cardNode(name);
    if (t.trick_winner === seat) c.classList.add("winner");
    slot.append(c);
    trick.append(slot);
  }
  felt.append(trick);
  node.append(felt);
  if (t.faults.length) {
    const list = el("ul", "faults");
    for (const [seat, reason, hand] of t.faults) {
      list.append(el("li", "", t.seats[seat] + ": " + reason + (hand ? " (hand " + hand + ")" : "")));
    }
    node.append(list);
  }
  return node;
}

function renderTables(part) {
  state.clockOffset = Number(part.now) - Date.now() / 1000;
  state.tables = part.tables;
  const box = document.getElementById("tables");
  box.replaceChildren(...part.tables.map(tableNode));
  document.getElementById("no-tables").hidden = part.tables.length > 0;
  updateClocks();
}

function updateClocks() {
  const now = Date.now() / 1000 + state.clockOffset - state.delay;
  for (const clock of document.querySelectorAll(".clock[data-deadline]")) {
    const left = Math.max(0, Number(clock.dataset.deadline) - now);
    clock.textContent = left.toFixed(1) + " s left";
  }
}

async function showHands(index) {
  const box = document.getElementById("hands");
  box.replaceChildren(el("p", "sub", "Loading…"));
  const reply = await fetch("api/game/" + encodeURIComponent(index) + query);
  if (!reply.ok) {
    box.replaceChildren(el("p", "sub", "These hands are not shown yet."));
    return;
  }
  const game = await reply.json();
  const title = el("h3", "", "Hands of " + game.game_id + " (deal " + game.deal_key + ")");
  const table = el("table", "hands");
  for (const hand of game.hands) {
    const tr = el("tr");
    tr.append(el("th", "", "hand " + hand.hand_number));
    hand.dealt.forEach((cards, seat) => {
      const td = el("td", "dealt");
      td.append(el("span", "who", game.seats[seat] + " (" + hand.points[seat] + ")"), " ");
      for (const c of cards) td.append(cardNode(c), " ");
      tr.append(td);
    });
    table.append(tr);
  }
  box.replaceChildren(title, table);
}

function renderFinished(part) {
  document.getElementById("played").textContent =
    part.played + " of " + part.games_total + " games finished; the newest first.";
  const body = document.querySelector("#finished tbody");
  body.replaceChildren();
  for (const g of part.games) {
    const tr = el("tr");
    tr.dataset.game = g.game_id;
    tr.append(el("td", "name", g.game_id));
    const seats = el("td", "name");
    g.seats.forEach((name, seat) => {
      const span = el("span", g.ranks[seat] === 1 ? "who first" : "who", name + " " + g.scores[seat]);
      seats.append(span, seat < 3 ? " · " : "");
    });
    tr.append(seats, el("td", "", g.faults));
    const hands = el("td", "name");
    if (g.revealed) {
      const button = el("button", "show", "show hands");
      button.type = "button";
      button.addEventListener("click", () => { showHands(g.game_index); });
      hands.append(button);
    } else {
      hands.append(el("span", "sub", "hidden until every game of " + g.deal_key + " has finished"));
    }
    tr.append(hands);
    body.append(tr);
  }
}

function handler(render) {
  return (event) => {
    try {
      render(JSON.parse(event.data));
    } catch (err) {
      setStatus("Could not show an update: " + err);
    }
  };
}

const source = new EventSource("events" + query);
source.addEventListener("open", () => setStatus("Connected: updates as they happen."));
source.addEventListener("error", () => setStatus("Disconnected: retrying (the run may have ended)."));
source.addEventListener("info", handler(renderInfo));
source.addEventListener("standings", handler(renderStandings));
source.addEventListener("tables", handler(renderTables));
source.addEventListener("finished", handler(renderFinished));
source.addEventListener("end", () => {
  source.close();
  setStatus("The run is over: its report is in the output folder (hearts-arena watch DIR serves this page again).");
});
window.setInterval(updateClocks, 200);
