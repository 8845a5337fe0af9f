// The live page: every text from the arena (and so from bots) is set with
// textContent, never parsed as HTML. All requests go to this page's origin.
"use strict";

const params = new URLSearchParams(window.location.search);
const token = params.get("token");
const query = token ? "?token=" + encodeURIComponent(token) : "";
const SUITS = { S: "♠", H: "♥", D: "♦", C: "♣" };
const SEAT_PLACES = ["south", "west", "north", "east"];
const state = {
  info: null, tables: [], clockOffset: 0, delay: 0, organiser: false,
  connected: false, ended: false, finished: null, finishedBefore: null,
};
// Milliseconds a card in the featured table: the choices, and the first one
// (?speed=MS, at least 10, adds its own).
const SPEEDS = [["4000", "slow (4 s a card)"], ["2000", "2 s a card"], ["1000", "1 s a card"],
  ["500", "fast (0.5 s)"], ["250", "fastest (0.25 s)"]];
const chosenSpeed = Math.max(10, Number(params.get("speed")) || 2000);
if (!SPEEDS.some((o) => Number(o[0]) === chosenSpeed)) SPEEDS.push([String(chosenSpeed), chosenSpeed + " ms a card"]);
const paced = {
  player: null, index: null, list: [], played: new Set(), waiting: false, playing: true,
  seat: -1, speed: String(chosenSpeed), timer: null,
};

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

/** A card as the report's replay writes it ("TH" -> "10♥"). */
function cardText(name) {
  const text = String(name);
  if (window.HeartsReplay) return window.HeartsReplay.cardText(text);
  const suit = text.slice(-1);
  return (text.length === 2 && text[0] === "T" ? "10" : text.slice(0, -1)) + (SUITS[suit] || suit);
}

function cardNode(name) {
  const text = String(name);
  const suit = text.slice(-1);
  const node = el("span", "card suit-" + (SUITS[suit] ? suit : "x"));
  node.dataset.card = text;
  node.textContent = cardText(text);
  return node;
}

/** A cell holding an entrant's name: cut with an ellipsis by the style, whole in its title. */
function nameCell(tag, className, name) {
  const node = el(tag, className, name);
  node.title = String(name);
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
  if (state.info && state.info.run !== undefined && state.runSeen !== undefined && info.run !== state.runSeen) {
    // Another run in the folder (run --overwrite): its games only.
    restartPaced();
    state.finishedBefore = null;
    document.getElementById("hands").replaceChildren();
  }
  state.runSeen = info.run;
  showTablesSection();
  if (!state.ended) {
    document.querySelector(".live-tag").textContent = info.mode === "live" ? "live" : "finished games";
  }
}

function showTablesSection() {
  const live = state.info && state.info.mode === "live";
  document.getElementById("tables-section").hidden = !(live && state.organiser) || state.ended;
}

function renderRole(role) {
  state.organiser = !!role.organiser;
  showTablesSection();
}

function renderStandings(part) {
  const body = document.querySelector("#standings tbody");
  body.replaceChildren();
  for (const row of part.rows) {
    const tr = el("tr", row.disqualified ? "disqualified" : "");
    tr.dataset.rank = row.rank;
    const name = nameCell("td", "name", row.name);
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
  document.getElementById("prefix").textContent = standingsNote(part);
}

/** How the standings were made and what they do not count yet. */
function standingsNote(part) {
  const counted = Number(part.counted !== undefined ? part.counted : part.prefix);
  let text = "Rated over all " + counted + " finished game" + (counted === 1 ? "" : "s") +
    " of " + part.games_total + ", in schedule order, as the report rates them.";
  if (part.missing > 0) {
    const some = (part.missing_ids || []).join(", ");
    text += " Not counted yet: " + part.missing + " game" + (part.missing === 1 ? "" : "s") +
      " still in play or to be played" + (some ? " (among them " + some + ")" : "") +
      "; each is rated in its place once it finishes, so these standings become the report's when the last game ends.";
  } else {
    text += " Every game is counted: these are the final standings.";
  }
  return text;
}

function seatBox(t, seat) {
  const box = el("div", "seat seat-" + SEAT_PLACES[seat]);
  if (t.turn === seat || (t.kind === "pass" && t.phase === "pass" && t.deadline)) box.classList.add("turn");
  box.append(nameCell("div", "seat-name", t.seats[seat]));
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
  document.getElementById("stale").hidden = true;
  updateClocks();
}

/** The tables as last known, marked as such: the page lost its server. */
function markStale(text) {
  const tables = document.querySelectorAll("#tables .table");
  for (const t of tables) t.classList.add("stale");
  const note = document.getElementById("stale");
  note.textContent = text;
  note.hidden = tables.length === 0;
  updateClocks();
}

/** A decision's time left; none once its deadline has passed (the referee
 * has moved on), nor while the page is disconnected or the run is over. */
function updateClocks() {
  const now = Date.now() / 1000 + state.clockOffset - state.delay;
  for (const clock of document.querySelectorAll(".clock[data-deadline]")) {
    const left = Number(clock.dataset.deadline) - now;
    const live = state.connected && !state.ended && left > 0;
    clock.textContent = live ? left.toFixed(1) + " s left" : "";
  }
}

const STOPPED = "The page's server has stopped (the run is over, or it was stopped): " +
  "the report's games/*.html pages have every game, and hearts-arena watch DIR --live PORT serves this page again.";

/** JSON of an API route, or null with `failed(text)` told why. */
async function getJSON(path, failed) {
  let reply;
  try {
    reply = await fetch(path + query);
  } catch (err) {
    failed(STOPPED);
    return null;
  }
  if (!reply.ok) {
    failed(reply.status === 404 ? "not shown yet" : "the server answered " + reply.status);
    return null;
  }
  return reply.json();
}

async function showHands(index) {
  const box = document.getElementById("hands");
  box.replaceChildren(el("p", "sub", "Loading…"));
  const game = await getJSON("api/game/" + encodeURIComponent(index), (why) => {
    box.replaceChildren(el("p", "sub", why === "not shown yet" ? "These hands are not shown yet." : why));
  });
  if (!game) return;
  const title = el("h3", "", "Hands of " + game.game_id + " (deal " + game.deal_key + ")");
  const table = el("table", "hands");
  for (const hand of game.hands) {
    const tr = el("tr");
    tr.append(el("th", "", "hand " + hand.hand_number));
    hand.dealt.forEach((cards, seat) => {
      const td = el("td", "dealt");
      td.append(nameCell("span", "who", game.seats[seat] + " (" + hand.points[seat] + ")"), " ");
      for (const c of cards) td.append(cardNode(c), " ");
      tr.append(td);
    });
    table.append(tr);
  }
  box.replaceChildren(title, table);
}

function renderFinished(part) {
  state.finished = part;
  if (state.finishedBefore === null) showFinished(part);
  else document.getElementById("played").textContent = part.played + " of " + part.games_total + " games finished.";
}

/** A page of finished games: the newest (the live part), or an older one. */
function showFinished(part) {
  const older = part.before !== null && part.before !== undefined;
  document.getElementById("played").textContent =
    part.played + " of " + part.games_total + " games finished; " + (older ? "an older page, the newest first." : "the newest first.");
  document.getElementById("newer").hidden = !older;
  document.getElementById("older").hidden = !part.older;
  const body = document.querySelector("#finished tbody");
  body.replaceChildren();
  for (const g of part.games) {
    const tr = el("tr");
    tr.dataset.game = g.game_id;
    tr.dataset.index = g.game_index;
    tr.append(el("td", "name", g.game_id));
    const seats = el("td", "name seats");
    g.seats.forEach((name, seat) => {
      const span = nameCell("span", g.ranks[seat] === 1 ? "who first" : "who", name + " " + g.scores[seat]);
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

async function pageFinished(before) {
  const note = document.getElementById("pager-note");
  note.textContent = "";
  if (before === null) {
    state.finishedBefore = null;
    if (state.finished) showFinished(state.finished);
    return;
  }
  const part = await getJSON("api/finished?before=" + encodeURIComponent(before), (why) => { note.textContent = why; });
  if (!part) return;
  state.finishedBefore = before;
  showFinished(part);
}

document.getElementById("older").addEventListener("click", () => {
  const rows = document.querySelectorAll("#finished tbody tr");
  if (rows.length) pageFinished(Number(rows[rows.length - 1].dataset.index));
});
document.getElementById("newer").addEventListener("click", () => { pageFinished(null); });

// -- the featured table: finished deals, card by card, at the viewer's pace ----------

function pacedNote(text) {
  const wait = document.getElementById("paced-wait");
  wait.textContent = text;
  wait.hidden = !text;
}

function restartPaced() {
  if (paced.player) paced.player.stop();
  if (paced.timer) window.clearTimeout(paced.timer);
  paced.player = null;
  paced.index = null;
  paced.played = new Set();
  paced.list = [];
  paced.waiting = false;
  document.getElementById("player").hidden = true;
  document.getElementById("paced-game").textContent = "";
  pacedNote("Waiting for the first deal whose every game has finished…");
}

function renderReplays(part) {
  paced.list = part.games;
  const pick = document.getElementById("paced-pick");
  pick.replaceChildren();
  for (const g of part.games.slice().reverse()) {
    const opt = el("option", "", g.game_id + " · " + g.seats.join(", "));
    opt.value = String(g.game_index);
    pick.append(opt);
  }
  if (paced.index !== null) pick.value = String(paced.index);
  if (paced.index === null || paced.waiting) nextReplay();
}

/** The game to feature next: the newest revealed one not shown yet (or, not
 * following the newest, the next one after the current in reveal order). */
function nextCandidate() {
  const list = paced.list;
  if (!list.length) return null;
  if (paced.index === null) return list[list.length - 1].game_index;
  if (document.getElementById("paced-follow").checked) {
    for (let i = list.length - 1; i >= 0; i--) {
      if (!paced.played.has(list[i].game_index)) return list[i].game_index;
    }
    return null;
  }
  const at = list.findIndex((g) => g.game_index === paced.index);
  for (let i = at + 1; i < list.length; i++) {
    if (!paced.played.has(list[i].game_index)) return list[i].game_index;
  }
  return null;
}

function nextReplay() {
  const next = nextCandidate();
  if (next === null) {
    paced.waiting = true;
    if (paced.index !== null) {
      pacedNote(state.ended ? "The run is over: every finished deal shown here has been played back."
        : "Waiting for the next deal whose every game has finished…");
    }
    return;
  }
  paced.waiting = false;
  feature(next);
}

async function feature(index) {
  const data = await getJSON("api/replay/" + encodeURIComponent(index), (why) => {
    pacedNote(why === "not shown yet" ? "That game's deal is not finished everywhere yet." : why);
  });
  if (!data) return;
  const node = document.getElementById("player");
  const before = paced.player;
  if (before) {
    paced.playing = before.timer !== null || (before.ended === true && before.i === before.list.length - 1);
    paced.speed = before.speed.value;
    paced.seat = before.seat;
    before.stop();
  }
  if (paced.timer) window.clearTimeout(paced.timer);
  paced.index = index;
  paced.played.add(index);
  node.dataset.game = String(index);
  const player = new window.HeartsReplay.Player(node, data, {
    history: false, speeds: SPEEDS, speed: paced.speed, onEnd: ended,
  });
  player.seat = paced.seat;
  paced.player = player;
  node.hidden = false;
  pacedNote("");
  document.getElementById("paced-pick").value = String(index);
  document.getElementById("paced-game").textContent = "Game " + data.game_id + " (deal " + data.deal_key + ")";
  player.render();
  if (paced.playing) player.start();
}

/** Autoplay reached a game's last card: the next one, after a pause of three
 * cards, unless the viewer took the player meanwhile (played or stepped). */
function ended(player) {
  player.ended = true;
  paced.playing = true;
  paced.timer = window.setTimeout(() => {
    const untouched = paced.player === player && player.timer === null && player.i === player.list.length - 1;
    if (untouched) nextReplay();
  }, 3 * (Number(player.speed.value) || 1000));
}

document.getElementById("paced-pick").addEventListener("change", (event) => {
  event.target.blur();
  feature(Number(event.target.value));
});
document.addEventListener("keydown", (event) => { if (paced.player) paced.player.key(event); });

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
source.addEventListener("open", () => {
  state.connected = true;
  setStatus("Connected: updates as they happen.");
});
source.addEventListener("error", () => {
  if (state.ended) return;
  state.connected = false;
  setStatus("Disconnected: retrying (the run may have ended).");
  markStale("Disconnected at " + new Date().toLocaleTimeString() + ": these tables are as they were then, not as they are.");
});
source.addEventListener("role", handler(renderRole));
source.addEventListener("info", handler(renderInfo));
source.addEventListener("standings", handler(renderStandings));
source.addEventListener("replays", handler(renderReplays));
source.addEventListener("tables", handler(renderTables));
source.addEventListener("finished", handler(renderFinished));
source.addEventListener("end", () => {
  source.close();
  state.ended = true;
  state.connected = false;
  const tag = document.querySelector(".live-tag");
  tag.textContent = "over";
  tag.classList.add("over");
  showTablesSection();
  updateClocks();
  if (paced.waiting && paced.index !== null) nextReplay();
  setStatus("The run is over: its report is in the output folder (hearts-arena watch DIR --live PORT serves this page again).");
});
window.setInterval(updateClocks, 200);
