#!/usr/bin/env node
// A Hearts bot written with the hearts-arena JavaScript kit: kit.js runs the
// protocol loop; this file only chooses moves. Put your strategy in
// choosePass and choosePlay. Log with kit.log (standard error); never
// console.log (stdout carries the protocol).
//
//   pass  the queen, king and ace of spades first, then the highest hearts,
//         then the highest other cards.
//   play  leading: the lowest card; following suit: the highest card that
//         still loses to the card winning the trick (duck), else, last to a
//         trick without points, the highest card, else the lowest; void in
//         the led suit: the queen of spades, then the highest heart, then
//         the highest card.
"use strict";
const kit = require("./kit.js");

function choosePass(view) {
  const first = ["QS", "AS", "KS"].filter((c) => view.hand.includes(c));
  const rest = view.hand.filter((c) => !first.includes(c));
  const hearts = rest.filter(kit.isHeart);
  const others = rest.filter((c) => !kit.isHeart(c));
  return [...first, ...kit.highest(hearts, hearts.length), ...kit.highest(others, others.length)].slice(0, 3);
}

function choosePlay(view) {
  const legal = view.legal;
  if (view.leading) return kit.lowest(legal);
  const follow = legal.filter((c) => kit.suit(c) === view.ledSuit);
  if (follow.length > 0) {
    const under = follow.filter((c) => kit.rank(c) < kit.rank(view.winning.card));
    if (under.length > 0) return kit.highest(under);
    if (view.lastToPlay && view.pointsOnTable === 0 && !follow.includes("QS")) return kit.highest(follow);
    return kit.lowest(follow);
  }
  if (legal.includes("QS")) return "QS";
  const hearts = legal.filter(kit.isHeart);
  return hearts.length > 0 ? kit.highest(hearts) : kit.highest(legal);
}

kit.run({ name: "js-kit", author: "hearts-arena kits", version: "1", choosePass, choosePlay });
