// The hearts-arena bot kit for JavaScript (Node.js, no packages): the protocol
// loop is done for you (protocol/README.md describes the messages). Write
// choosePass(view) and choosePlay(view) (see bot.js) and hand them to run().
//
// The views mirror the Python kit (arena/botkit.py): the same fields in the
// same order, in camelCase. Cards are the protocol's two-character strings
// ("QS", "TD"). Log with kit.log (standard error); stdout carries the protocol.
"use strict";

const RANKS = "23456789TJQKA"; // low to high (T is the ten)
const SUITS = "CDSH"; // the protocol's sort order
const QUEEN_OF_SPADES = "QS";
const TWO_OF_CLUBS = "2C";

const rank = (card) => RANKS.indexOf(card[0]); // 0 for a two ... 12 for an ace
const suit = (card) => card[1];
const isHeart = (card) => card[1] === "H";
const points = (card) => (card === QUEEN_OF_SPADES ? 13 : isHeart(card) ? 1 : 0); // R11
const suitOrder = (card) => SUITS.indexOf(card[1]);

// Cards in the protocol's order: by suit (C, D, S, H), then rank.
const sortCards = (cards) => [...cards].sort((a, b) => suitOrder(a) - suitOrder(b) || rank(a) - rank(b));

// The cards grouped by suit, each group low to high; every suit is a key.
function bySuit(cards) {
  const out = { C: [], D: [], S: [], H: [] };
  for (const c of sortCards(cards)) out[suit(c)].push(c);
  return out;
}

// The n highest cards by rank (n undefined: the highest card); equal ranks:
// hearts, spades, diamonds, clubs first. Throws when there are too few.
function highest(cards, n) {
  const count = n === undefined ? 1 : n;
  if (cards.length < count) throw new Error(`${count} cards asked, ${cards.length} given`);
  const out = [...cards].sort((a, b) => rank(b) - rank(a) || suitOrder(b) - suitOrder(a));
  return n === undefined ? out[0] : out.slice(0, n);
}

// The lowest card by rank; equal ranks: the first in protocol order.
function lowest(cards) {
  if (cards.length === 0) throw new Error("no cards");
  return sortCards(cards).reduce((best, c) => (rank(c) < rank(best) ? c : best));
}

const defaultPass = (hand) => highest(hand, 3); // the referee's default pass

// The card ({seat, card}) winning a (possibly unfinished) trick so far (R10).
function trickWinner(played) {
  if (played.length === 0) throw new Error("an empty trick has no winner");
  const led = suit(played[0].card);
  return played.filter((p) => suit(p.card) === led).reduce((b, p) => (rank(p.card) > rank(b.card) ? p : b));
}

const log = (text) => process.stderr.write(`kit: ${text}\n`);

const played = (items) => items.map((p) => ({ seat: p.seat, card: p.card }));

// A play request as a view: game, seat, handNumber, trickNumber, leader,
// trick, tricks, hand, legal, heartsBroken, passed, passedTo, received,
// receivedFrom, handPoints, scores, timeMs; and leading, ledSuit, winning,
// lastToPlay, pointsOnTable, played (every card played this hand).
function playView(m, game) {
  const view = {
    game,
    seat: m.seat,
    handNumber: m.hand_number,
    trickNumber: m.trick_number,
    leader: m.leader,
    trick: played(m.trick),
    tricks: m.tricks.map((t) => ({ leader: t.leader, cards: played(t.cards), winner: t.winner, points: t.points })),
    hand: [...m.hand],
    legal: [...m.legal],
    heartsBroken: Boolean(m.hearts_broken),
    passed: m.passed ? [...m.passed.cards] : null,
    passedTo: m.passed ? m.passed.to : null,
    received: m.received ? [...m.received.cards] : null,
    receivedFrom: m.received ? m.received.from : null,
    handPoints: [...m.hand_points],
    scores: [...m.scores],
    timeMs: m.time_ms,
  };
  view.leading = view.trick.length === 0;
  view.ledSuit = view.leading ? null : suit(view.trick[0].card);
  view.winning = view.leading ? null : trickWinner(view.trick);
  view.lastToPlay = view.trick.length === 3;
  view.pointsOnTable = view.trick.reduce((n, p) => n + points(p.card), 0);
  view.played = [...view.tricks.flatMap((t) => t.cards.map((p) => p.card)), ...view.trick.map((p) => p.card)];
  return view;
}

// Play: read messages from stdin, answer hello, pass and play, exit on bye or
// end of input. bot: {name, author, version, choosePass, choosePlay,
// fallback}; with fallback (the default) a throw or an illegal choice is
// logged and replaced by the referee's default move.
function run(bot, input = process.stdin, output = process.stdout) {
  const fallback = bot.fallback !== false;
  let game = null;
  let scores = [0, 0, 0, 0];
  let pending = "";
  const send = (reply) => output.write(JSON.stringify(reply) + "\n"); // a write to a pipe is not buffered by Node

  function pass(view) {
    if (!bot.choosePass) return defaultPass(view.hand);
    if (!fallback) return bot.choosePass(view);
    try {
      const cards = bot.choosePass(view);
      if (Array.isArray(cards) && cards.length === 3 && new Set(cards).size === 3 && cards.every((c) => view.hand.includes(c))) return cards;
      log(`choosePass returned ${JSON.stringify(cards)}: not three distinct cards of the hand`);
    } catch (e) {
      log(`choosePass threw: ${e && e.stack ? e.stack : e}`);
    }
    return defaultPass(view.hand);
  }

  function play(view) {
    if (!bot.choosePlay) return view.legal[0];
    if (!fallback) return bot.choosePlay(view);
    try {
      const card = bot.choosePlay(view);
      if (view.legal.includes(card)) return card;
      log(`choosePlay returned ${JSON.stringify(card)}, not legal (legal: ${view.legal.join(" ")})`);
    } catch (e) {
      log(`choosePlay threw: ${e && e.stack ? e.stack : e}`);
    }
    return view.legal[0];
  }

  // Returns false on bye.
  function handle(line) {
    if (line.trim() === "") return true;
    let m;
    try {
      m = JSON.parse(line);
    } catch (e) {
      log(`not JSON, skipped: ${line.slice(0, 80)}`);
      return true;
    }
    if (m === null || typeof m !== "object" || Array.isArray(m)) return true;
    const request = m.id !== undefined && m.id !== null;
    try {
      switch (m.type) {
        case "bye":
          return false;
        case "hello":
          if (request) {
            const reply = { type: "hello", id: m.id, name: bot.name || "kit-bot" };
            if (bot.author) reply.author = bot.author;
            if (bot.version) reply.version = bot.version;
            send(reply);
          }
          break;
        case "pass":
          if (request) {
            const view = { game, handNumber: m.hand_number, direction: m.direction, to: m.to, hand: [...m.hand], scores, timeMs: m.time_ms };
            send({ type: "pass", id: m.id, cards: pass(view) });
          }
          break;
        case "play":
          if (request) send({ type: "play", id: m.id, card: play(playView(m, game)) });
          break;
        case "game_start":
          game = { gameId: m.game_id, seat: m.seat, players: [...m.players], targetScore: m.target_score ?? null, hands: m.hands ?? null, seed: m.seed ?? 0 };
          scores = [0, 0, 0, 0];
          break;
        case "deal":
          scores = [...m.scores];
          break;
        default: // a notification this kit does not use, or an unknown type
      }
    } catch (e) {
      log(`a message this kit cannot read, skipped: ${e}`);
    }
    return true;
  }

  input.setEncoding("utf8");
  input.on("data", (chunk) => {
    pending += chunk;
    let nl;
    while ((nl = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, nl).replace(/\r$/, "");
      pending = pending.slice(nl + 1);
      if (!handle(line)) {
        input.pause();
        input.destroy();
        output.write("", () => process.exit(0));
        return;
      }
    }
  });
  input.on("end", () => {
    if (pending) handle(pending.replace(/\r$/, ""));
    output.write("", () => process.exit(0));
  });
}

module.exports = {
  RANKS, SUITS, QUEEN_OF_SPADES, TWO_OF_CLUBS,
  rank, suit, isHeart, points, sortCards, bySuit, highest, lowest, defaultPass, trickWinner, log, run,
};
