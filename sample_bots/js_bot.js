#!/usr/bin/env node
// js_bot: a sample bot in JavaScript (Node.js, no packages), to show that the
// protocol is language-neutral: one JSON object per line on stdin and stdout.
//
// Strategy: pass the three highest cards (by rank; equal ranks: hearts,
// spades, diamonds, clubs first); play the lowest legal card by rank (equal
// ranks: the first in `legal`, which the referee sorts clubs, diamonds,
// spades, hearts). No memory, no randomness.
//
// Run it in a tournament as `js=node sample_bots/js_bot.js`, or check it with
// `hearts-arena check js=node sample_bots/js_bot.js`.
"use strict";

const readline = require("readline");

const RANKS = "23456789TJQKA";
const SUITS = "CDSH";
const rank = (card) => RANKS.indexOf(card[0]);
const suitOrder = (card) => SUITS.indexOf(card[1]);

function choosePass(msg) {
  const sorted = [...msg.hand].sort((a, b) => rank(b) - rank(a) || suitOrder(b) - suitOrder(a));
  return sorted.slice(0, 3);
}

function choosePlay(msg) {
  let best = msg.legal[0];
  for (const card of msg.legal) {
    if (rank(card) < rank(best)) best = card;
  }
  return best;
}

function send(reply) {
  process.stdout.write(JSON.stringify(reply) + "\n"); // one line, flushed by Node
}

const input = readline.createInterface({ input: process.stdin, terminal: false });
input.on("line", (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch (err) {
    console.error(`js_bot: not JSON: ${line.slice(0, 80)}`); // stderr is ours
    return;
  }
  if (msg === null || typeof msg !== "object") return;
  if (msg.type === "bye") {
    input.close();
    return;
  }
  if (msg.id === undefined) return; // a notification: no answer
  if (msg.type === "hello") {
    send({ type: "hello", id: msg.id, name: "js", author: "hearts-arena samples", version: "1" });
  } else if (msg.type === "pass") {
    send({ type: "pass", id: msg.id, cards: choosePass(msg) });
  } else if (msg.type === "play") {
    send({ type: "play", id: msg.id, card: choosePlay(msg) });
  }
});
input.on("close", () => process.exit(0));
